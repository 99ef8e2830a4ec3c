#include "glue/profiler.h"

#include "runtime/options.h"

#include "ggml-impl.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace xdna {

namespace {

constexpr size_t kMaxTraceEvents = 500000;  // about 50 MB of JSON

double us_between(Profiler::clock::time_point a, Profiler::clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
}

// One profile row per kernel and shape (for a matmul: M x N x padded K).
std::string row_key(const Invocation & inv) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%-13s %s", inv.kernel_name() ? inv.kernel_name() : kernel_kind_name(inv.kind()),
                  inv.shape_label().c_str());
    return buf;
}

}  // namespace

Profiler::Profiler() {
    const OptionValue<bool> profile = profile_option();
    report_option_error(profile.error, "1 (profiling on)");
    profile_ = profile.value;
    trace_path_ = trace_option().value;
    // Every backend traces to its own file: the first to the path given, later ones to path.2, path.3, ...
    static std::atomic<int> tracers{0};
    if (!trace_path_.empty()) {
        const int n = ++tracers;
        if (n > 1) {
            trace_path_ += "." + std::to_string(n);
        }
    }
}

void Profiler::record_fallback(const Batch & batch, const std::string & why) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++fallbacks_;
    fallback_invocations_ += batch.invocations.size();
    last_fallback_why_ = why;
}

void Profiler::record(const Batch & batch, const std::vector<InvocationStats> & stats, const BatchStats & batch_stats,
                      clock::time_point prep_begin, clock::time_point submit_begin, clock::time_point end) {
    if (!enabled() || batch.empty()) {
        return;
    }
    const double host_us = us_between(prep_begin, submit_begin);
    const double device_us = us_between(submit_begin, end);
    double total_macs = 0;
    for (const Invocation & inv : batch.invocations) {
        total_macs += static_cast<double>(inv.macs());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++submissions_;
    host_us_total_ += host_us;
    modelled_submit_us_ += batch_stats.modelled_submit_us;
    modelled_switch_us_ += batch_stats.modelled_switch_us;
    modelled_switches_ += batch_stats.modelled_switches;
    const double n = static_cast<double>(batch.invocations.size());
    for (size_t i = 0; i < batch.invocations.size(); ++i) {
        const Invocation & inv = batch.invocations[i];
        const InvocationStats s = i < stats.size() ? stats[i] : InvocationStats{};
        Row & r = rows_[row_key(inv)];
        ++r.count;
        const auto * mm = std::get_if<MatmulParams>(&inv.params);
        expert_invocations_ += mm != nullptr && mm->expert >= 0 ? 1 : 0;
        r.host_us += host_us / n;  // host preparation is shared by the submission's invocations
        r.device_us += total_macs > 0 ? device_us * static_cast<double>(inv.macs()) / total_macs : device_us / n;
        r.modelled_us += s.modelled_us;
        r.roofline_us += s.modelled_roofline_us;
        r.macs += static_cast<double>(s.macs);
        r.bytes += static_cast<double>(s.bytes_read + s.bytes_written);
    }
    if (!trace_path_.empty() && trace_.size() + batch.invocations.size() + 2 < kMaxTraceEvents) {
        const double t0 = us_between(origin_, prep_begin), t1 = us_between(origin_, submit_begin);
        trace_.push_back({"host: plan + quantize activations", 1, t0, host_us});
        trace_.push_back({"submission (measured, simulator executes)", 2, t1, device_us});
        double t = t1;
        trace_.push_back({"submit (modelled)", 3, t, batch_stats.modelled_submit_us});
        t += batch_stats.modelled_submit_us;
        for (size_t i = 0; i < batch.invocations.size() && i < stats.size(); ++i) {
            const Invocation & inv = batch.invocations[i];
            const char * name = inv.kernel_name();
            const auto * mm = std::get_if<MatmulParams>(&inv.params);
            trace_.push_back({std::string(name ? name : "?") + " (modelled NPU)", 3, t, stats[i].modelled_us, kernel_kind_name(inv.key.kind),
                              mm != nullptr && mm->contract != nullptr ? ggml_type_name(mm->contract->weight_type) : ""});
            t += stats[i].modelled_us;
        }
    }
}

void Profiler::record_host_run(const ggml_cgraph * graph, int i0, int i1, clock::time_point begin, clock::time_point end) {
    if (!enabled()) {
        return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++host_runs_;
    host_op_us_ += us_between(begin, end);
    for (int i = i0; i < i1; ++i) {
        const ggml_tensor * n = graph->nodes[i];
        if (!ggml_op_is_empty(n->op)) {
            ++host_op_nodes_[ggml_op_desc(n)];
        }
    }
    if (!trace_path_.empty() && trace_.size() + 1 < kMaxTraceEvents) {
        trace_.push_back({"host-op path (" + std::to_string(i1 - i0) + " nodes)", 1, us_between(origin_, begin),
                          us_between(begin, end)});
    }
}

void Profiler::record_graph(uint64_t submissions, const std::vector<std::string> & cuts, bool replayed) {
    if (!enabled()) {
        return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++graphs_;
    graphs_replayed_ += replayed ? 1 : 0;
    graph_submissions_ += submissions;
    max_graph_submissions_ = std::max(max_graph_submissions_, submissions);
    for (const std::string & c : cuts) {
        ++cuts_[c];
    }
}

void Profiler::report(const char * device_description) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (profile_ && (submissions_ > 0 || fallbacks_ > 0 || host_runs_ > 0)) {
        std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
        std::sort(rows.begin(), rows.end(), [](const auto & a, const auto & b) { return a.second.modelled_us > b.second.modelled_us; });
        uint64_t invocations = 0;
        double modelled = modelled_submit_us_ + modelled_switch_us_, device = 0;
        for (const auto & r : rows) {
            invocations += r.second.count;
            modelled += r.second.modelled_us;
            device += r.second.device_us;
        }
        std::fprintf(stderr, "\nxdna profile (%s): %llu submissions, %llu matmul invocations\n", device_description,
                     static_cast<unsigned long long>(submissions_), static_cast<unsigned long long>(invocations));
        if (expert_invocations_ > 0) {
            std::fprintf(stderr, "  of which %llu MUL_MAT_ID expert invocations (one per expert a ubatch selected)\n",
                         static_cast<unsigned long long>(expert_invocations_));
        }
        std::fprintf(stderr, "  host overhead per invocation (measured, plan + activation quantization): %.1f us\n",
                     host_us_total_ / std::max<uint64_t>(invocations, 1));
        std::fprintf(stderr, "  NPU time (MODELLED by the XDNA2 timing model, not measured): %.1f ms, of which submissions %.1f ms, "
                     "%llu changes of program between consecutive invocations (xclbin switches) %.1f ms\n",
                     modelled / 1e3, modelled_submit_us_ / 1e3, static_cast<unsigned long long>(modelled_switches_),
                     modelled_switch_us_ / 1e3);
        std::fprintf(stderr, "  device time (measured: the simulator executing on the host CPU): %.1f ms\n", device / 1e3);
        std::fprintf(stderr, "  %-35s %7s %9s %11s %12s %9s %9s %9s %9s\n", "kernel, M x N x Kp", "count", "host us",
                     "sim us", "model us", "GMAC", "MB", "mod TOPS", "roofline");
        for (const auto & [key, r] : rows) {
            const double c = static_cast<double>(r.count);
            std::fprintf(stderr, "  %-35s %7llu %9.1f %11.1f %12.1f %9.3f %9.2f %9.2f %8.0f%%\n", key.c_str(),
                         static_cast<unsigned long long>(r.count), r.host_us / c, r.device_us / c, r.modelled_us / c,
                         r.macs / 1e9, r.bytes / 1e6, r.modelled_us > 0 ? 2.0 * r.macs / r.modelled_us / 1e6 : 0.0,
                         r.modelled_us > 0 ? 100.0 * r.roofline_us / r.modelled_us : 0.0);
        }
        std::fprintf(stderr, "  %-35s %7llu   (submissions whose device run failed, computed on the CPU: %llu invocations)\n",
                     "CPU fallback", static_cast<unsigned long long>(fallbacks_),
                     static_cast<unsigned long long>(fallback_invocations_));
        std::fprintf(stderr, "  (per call: host us and sim us measured on this machine; model us, TOPS and roofline %% are modelled)\n");
        if (graphs_ > 0) {
            uint64_t n_cuts = 0;
            for (const auto & c : cuts_) {
                n_cuts += c.second;
            }
            std::fprintf(stderr, "  graphs: %llu (%llu replayed a graph plan); submissions per graph: %.2f on average, %llu at most; host runs cutting them: %.2f per graph\n",
                         static_cast<unsigned long long>(graphs_), static_cast<unsigned long long>(graphs_replayed_),
                         static_cast<double>(graph_submissions_) / graphs_,
                         static_cast<unsigned long long>(max_graph_submissions_), static_cast<double>(n_cuts) / graphs_);
            std::vector<std::pair<std::string, uint64_t>> cuts(cuts_.begin(), cuts_.end());
            std::sort(cuts.begin(), cuts.end(), [](const auto & a, const auto & b) { return a.second > b.second; });
            for (const auto & [ops, count] : cuts) {
                std::fprintf(stderr, "    cut %7llu times by host ops %s\n", static_cast<unsigned long long>(count), ops.c_str());
            }
        }
        if (host_runs_ > 0) {
            uint64_t nodes = 0;
            for (const auto & h : host_op_nodes_) {
                nodes += h.second;
            }
            std::fprintf(stderr, "  host-op path (ops without an NPU kernel, computed on the host on device memory): %llu nodes in %llu runs, %.1f ms measured\n",
                         static_cast<unsigned long long>(nodes), static_cast<unsigned long long>(host_runs_), host_op_us_ / 1e3);
            std::vector<std::pair<std::string, uint64_t>> ops(host_op_nodes_.begin(), host_op_nodes_.end());
            std::sort(ops.begin(), ops.end(), [](const auto & a, const auto & b) { return a.second > b.second; });
            for (const auto & [op, count] : ops) {
                std::fprintf(stderr, "    %-24s %9llu\n", op.c_str(), static_cast<unsigned long long>(count));
            }
        }
    }
    if (!trace_path_.empty() && !trace_.empty()) {
        if (FILE * f = std::fopen(trace_path_.c_str(), "w")) {
            std::fprintf(f, "{\"traceEvents\":[\n");
            std::fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"host (measured)\"}},\n");
            std::fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"device run (measured, simulator)\"}},\n");
            std::fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":3,\"args\":{\"name\":\"NPU (MODELLED)\"}}");
            for (const auto & e : trace_) {
                std::fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f", e.name.c_str(),
                             e.tid, e.ts_us, e.dur_us);
                if (!e.kind.empty()) {
                    std::fprintf(f, ",\"args\":{\"kind\":\"%s\",\"weights\":\"%s\"}", e.kind.c_str(), e.weights.c_str());
                }
                std::fprintf(f, "}");
            }
            std::fprintf(f, "\n]}\n");
            std::fclose(f);
            std::fprintf(stderr, "xdna: trace written to %s (%zu events)\n", trace_path_.c_str(), trace_.size());
        } else {
            std::fprintf(stderr, "xdna: cannot write trace file %s\n", trace_path_.c_str());
        }
    }
    rows_.clear();
    trace_.clear();
    submissions_ = 0;
    expert_invocations_ = 0;
    fallbacks_ = 0;
    fallback_invocations_ = 0;
    host_us_total_ = 0;
    modelled_submit_us_ = 0;
    host_op_nodes_.clear();
    host_runs_ = 0;
    host_op_us_ = 0;
    graphs_ = graph_submissions_ = max_graph_submissions_ = 0;
    cuts_.clear();
}

}  // namespace xdna
