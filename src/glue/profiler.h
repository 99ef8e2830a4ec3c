// GGML_XDNA_PROFILE=1: a table per op kind and shape, printed when a backend is freed (each backend has
// its own profiler: one context's figures never mix with, or reset, another's);
// GGML_XDNA_TRACE=file.json: a Chrome trace (chrome://tracing, Perfetto) of host preparation,
// submissions and the timing model's NPU time. Modelled figures are labelled as modelled.
#pragma once

#include "runtime/device.h"

#include "ggml.h"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace xdna {

class Profiler {
public:
    using clock = std::chrono::steady_clock;

    Profiler();

    bool enabled() const { return profile_ || !trace_path_.empty(); }

    // One submission whose device run failed and which the host computed instead (counted always,
    // shown in the table).
    void record_fallback(const Batch & batch, const std::string & why);

    // One submission: host preparation [prep_begin, submit_begin), device run [submit_begin, end).
    void record(const Batch & batch, const std::vector<InvocationStats> & stats, const BatchStats & batch_stats,
                clock::time_point prep_begin, clock::time_point submit_begin, clock::time_point end);

    // Nodes [i0, i1) of `graph` computed by the host-op path in [begin, end): counted per op.
    void record_host_run(const ggml_cgraph * graph, int i0, int i1, clock::time_point begin, clock::time_point end);

    // One graph computed: how many submissions it took, and the host runs that cut it (each one a run
    // between two of its submissions, named by the ops in it).
    // One graph computed: its submissions, the host runs between them, and whether it replayed a graph plan.
    void record_graph(uint64_t submissions, const std::vector<std::string> & cuts, bool replayed);

    // Print the table (GGML_XDNA_PROFILE) and write the trace (GGML_XDNA_TRACE); then start afresh.
    void report(const char * device_description);

private:
    struct Row {
        uint64_t count = 0;
        double   host_us = 0, device_us = 0, modelled_us = 0, roofline_us = 0;
        double   macs = 0, bytes = 0;
    };
    struct TraceEvent {
        std::string name;
        int         tid;
        double      ts_us, dur_us;
        // An invocation's program, as the timing model tells programs apart: its kind and, for a matmul,
        // its contract's weight type (`xdna-bench order` prints the model's in the same words).
        std::string kind, weights;
    };

    bool                       profile_ = false;
    std::string                trace_path_;
    std::mutex                 mutex_;
    std::map<std::string, Row> rows_;
    uint64_t                   submissions_ = 0;
    uint64_t                   expert_invocations_ = 0;  // MUL_MAT_ID: one per selected expert
    uint64_t                   fallbacks_ = 0, fallback_invocations_ = 0;
    std::string                last_fallback_why_;
    double                     host_us_total_ = 0;
    double                     modelled_submit_us_ = 0;
    double                     modelled_switch_us_ = 0;
    uint64_t                   modelled_switches_ = 0;
    std::map<std::string, uint64_t> host_op_nodes_;  // host-op path: nodes per op
    uint64_t                   host_runs_ = 0;
    double                     host_op_us_ = 0;
    uint64_t                   graphs_ = 0, graph_submissions_ = 0, max_graph_submissions_ = 0, graphs_replayed_ = 0;
    std::map<std::string, uint64_t> cuts_;  // the host runs that cut a graph's submissions, by their ops
    std::vector<TraceEvent>    trace_;
    clock::time_point          origin_ = clock::now();
};

}  // namespace xdna
