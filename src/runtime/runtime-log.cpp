#include "runtime/runtime-log.h"

#include <cstdio>
#include <mutex>

namespace xdna {

namespace {

std::mutex & sink_mutex() {
    static std::mutex m;
    return m;
}

LogSink & sink() {
    static LogSink s;
    return s;
}

}  // namespace

void set_runtime_log_sink(LogSink s) {
    std::lock_guard<std::mutex> lock(sink_mutex());
    sink() = std::move(s);
}

void runtime_log(LogLevel level, const std::string & message) {
    std::lock_guard<std::mutex> lock(sink_mutex());
    if (sink()) {
        sink()(level, message);
        return;
    }
    const char * prefix = level == LogLevel::error ? "error" : level == LogLevel::warn ? "warning" : "info";
    std::fprintf(stderr, "xdna: %s: %s\n", prefix, message.c_str());
}

}  // namespace xdna
