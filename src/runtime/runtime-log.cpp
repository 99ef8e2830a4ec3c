#include "runtime/runtime-log.h"

#include <cstdio>
#include <mutex>
#include <set>

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
    if (level == LogLevel::debug) {
        return;
    }
    const char * prefix = level == LogLevel::error ? "error" : level == LogLevel::warn ? "warning" : "info";
    std::fprintf(stderr, "xdna: %s: %s\n", prefix, message.c_str());
}

void runtime_log_debug_once(const std::string & message) {
    static std::mutex m;
    static std::set<std::string> seen;
    {
        std::lock_guard<std::mutex> lock(m);
        if (!seen.insert(message).second) {
            return;
        }
    }
    runtime_log(LogLevel::debug, message);
}

}  // namespace xdna
