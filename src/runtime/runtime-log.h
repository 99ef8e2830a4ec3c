// Log sink of the runtime layer.
//
// The runtime (manifest loading, XRT device) reports problems that do not fail the caller outright,
// e.g. a kernel entry dropped because its file is corrupt: the op then runs on the CPU, and the user
// needs one line saying why. The runtime does not depend on ggml's private logging, so the host
// (the ggml glue, a tool) may route these lines wherever it logs; by default they go to stderr.
#pragma once

#include <functional>
#include <string>

namespace xdna {

enum class LogLevel { debug, info, warn, error };

using LogSink = std::function<void(LogLevel, const std::string &)>;

// Replace the sink (nullptr restores the stderr default). Not meant to be called concurrently with logging.
void set_runtime_log_sink(LogSink sink);

// One line, without a trailing newline; the sink adds what it needs. The default sink drops debug lines.
void runtime_log(LogLevel level, const std::string & message);

// A debug line once per process per distinct message (for decisions taken per op and per graph).
void runtime_log_debug_once(const std::string & message);

}  // namespace xdna
