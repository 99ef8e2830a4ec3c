#include "sim/calibration-points.h"

#include <cmath>

namespace xdna {

namespace {

constexpr const char * kAsmPoint = "int8 GEMM, int8 out";
constexpr const char * kCppPoint = "bf16 GEMM";
constexpr const char * kFirstPoint = "mlir-aie whole_array int8 (patched)";
constexpr const char * kBwPoint = "q4 GEMV streaming";

// Bytes per value of the project's formats (ggml block sizes: bytes per block / values per block).
constexpr double kQ4K = 144.0 / 256;
constexpr double kQ8K = 292.0 / 256;
constexpr double kBfp16 = 9.0 / 8;  // 8-bit mantissas + one 8-bit exponent per 8 values

ModelShape gemv_q4k(int64_t m, int64_t k) {
    ModelShape s = gemm_shape(KernelFamily::int8xint4, m, 1, k, {64, 4, 256}, kQ4K, kQ8K, 4);
    s.weight_type = GGML_TYPE_Q4_K;
    return s;
}

ModelShape limited(ModelShape s, int columns, int rows) {
    s.max_columns = columns;
    s.max_rows = rows;
    return s;
}

std::vector<CalibrationPoint> make_points() {
    // The int8 GEMMs' matrix size is not in our facts sheet: 4608^3 is a whole number of per-core tiles
    // over the 8 x 4 array for both tiles below. The int8-output design's per-core tile is published as
    // 144 x 72 x 144 (m x k x n). Its int32 accumulators (144 x 144 x 4 = 81 KB) would not fit a 64 KB
    // core as an int32 output tile, so the int32-output point uses the largest square tile that does:
    // 2 x (m*k + k*n) + 4*m*n <= 64 KB at k = 64 gives m = n = 96 (61 KB). bf16/bfp16 likewise: 64^3.
    const ModelShape gemm_i8 = gemm_shape(KernelFamily::int8_plain, 4608, 4608, 4608, {144, 144, 72}, 1, 1, 1);
    const ModelShape gemm_i32 = gemm_shape(KernelFamily::int8_plain, 4608, 4608, 4608, {96, 96, 64}, 1, 1, 4);
    const ModelShape gemm_bf16 = gemm_shape(KernelFamily::bf16_emulated, 4608, 4608, 4608, {64, 64, 64}, 2, 2, 2);
    const ModelShape flm = gemm_shape(KernelFamily::bfp16, 1024, 6144, 1536, {64, 64, 64}, kBfp16, kBfp16, 2);
    const ModelShape whole_i8 = gemm_shape(KernelFamily::int8_plain, 4096, 4096, 4096, {64, 64, 64}, 1, 1, 4);
    const ModelShape whole_bf16 = gemm_shape(KernelFamily::bf16_emulated, 2048, 2048, 2048, {64, 64, 64}, 2, 2, 2);
    const ModelShape qvac = gemm_shape(KernelFamily::int8_plain, 2048, 2048, 2048, {64, 64, 64}, 1, 1, 4);
    const ModelShape air_small = limited(gemm_shape(KernelFamily::bf16_emulated, 2048, 1, 8192, {64, 1, 128}, 2, 2, 2), 8, 1);
    const ModelShape air_large = limited(gemm_shape(KernelFamily::bf16_emulated, 49152, 1, 2048, {64, 1, 128}, 2, 2, 2), 8, 1);
    const ModelShape iron = limited(gemm_shape(KernelFamily::bf16_emulated, 2048, 1, 8192, {64, 1, 128}, 2, 2, 2), 8, 1);

    using T = EfficiencyTier;
    // Stated bounds of held-out points: the error recorded when the tiers were fitted, rounded up to the
    // next 5% (a regression guard for the documented figure, not an accuracy claim).
    return {
        {kAsmPoint, "arXiv 2512.13282", PointKind::fitted, PointMetric::tops, 37.7, 1, "krackan", true, gemm_i8,
         "fits the assembly-tuned tier; 37.35-38.05 published, midpoint used; size assumed 4608^3", T::assembly_tuned},
        {kCppPoint, "arXiv 2512.13282", PointKind::fitted, PointMetric::tops, 14.71, 1, "krackan", true, gemm_bf16,
         "fits the competent C++ tier (kernel style not stated: treated as compiler-scheduled); size assumed 4608^3",
         T::competent_cpp},
        {kFirstPoint, "amd/IRON issues 171/172", PointKind::fitted, PointMetric::tops, 7.6, 1, "krackan", true, whole_i8,
         "fits the first-kernel tier; 7-8.2 TOPS at 2048^3-4096^3, midpoint at 4096^3; 64^3 tiles, int32 out assumed",
         T::first_kernel},
        {kBwPoint, "qvac ggml-xdna HANDOFF", PointKind::fitted, PointMetric::weight_gbs, 56, 1, "krackan", false,
         gemv_q4k(14336, 4096),
         "fits the Krackan bandwidth; shape assumed (14336 x 4096 Q4_K); weight bytes over kernel time",
         T::competent_cpp},
        {"int8 GEMM, int32 out", "arXiv 2512.13282", PointKind::held_out, PointMetric::tops, 25.31, 10, "krackan",
         true, gemm_i32, "same size; 4-byte outputs force a smaller tile: more re-reads, DRAM-bound", T::assembly_tuned},
        {"IRON flm.GEMM bfp16 1024x1536x6144", "amd/IRON flm/gemm README", PointKind::held_out, PointMetric::time_us,
         1143, 25, "krackan", true, flm, "aie_api C++; machine not stated", T::competent_cpp},
        {"FastFlowLM mm overlay, same shape", "amd/IRON flm/gemm README", PointKind::held_out, PointMetric::time_us,
         2175, 60, "krackan", true, flm, "closed kernel of unknown style; machine not stated", T::competent_cpp},
        {"qvac int8 GEMM standalone", "qvac PLAN", PointKind::held_out, PointMetric::tops, 3.4, 115, "halo", true, qvac,
         "shape not stated (2048^3, 64^3 tiles assumed); Strix Halo", T::first_kernel},
        {"mlir-aie whole_array bf16 2048^3", "amd/IRON issue 55", PointKind::held_out, PointMetric::tops, 0.696, 440,
         "krackan", true, whole_bf16, "64^3 tiles, 8 columns; far below every tier: its limits are not the core's",
         T::first_kernel},
        {"mlir-air bf16 GEMV 2048x8192", "Xilinx/mlir-air GEMV_bf16.md", PointKind::held_out, PointMetric::time_us,
         1082, 35, "krackan", true, air_small, "8 columns, one core each; machine not stated", T::competent_cpp},
        {"mlir-air bf16 GEMV 49152x2048", "Xilinx/mlir-air GEMV_bf16.md", PointKind::held_out, PointMetric::time_us,
         6187, 45, "krackan", true, air_large, "8 columns, one core each; machine not stated", T::competent_cpp},
        {"IRON GEMV 2048x8192 bf16", "Xilinx/mlir-air PR 1360", PointKind::held_out, PointMetric::time_us, 682, 5,
         "krackan", true, iron, "8 x 1 cores; machine not stated", T::competent_cpp},
    };
}

const CalibrationPoint & point_named(const char * name) {
    for (const auto & p : calibration_points()) {
        if (std::string(p.name) == name) {
            return p;
        }
    }
    return calibration_points().front();
}

}  // namespace

const std::vector<CalibrationPoint> & calibration_points() {
    static const std::vector<CalibrationPoint> points = make_points();
    return points;
}

double modelled_value(const CalibrationPoint & p, const TimingModel & model) {
    const ModelledTime t = model.invocation(p.shape);
    const double us = t.total_us + (p.with_submit ? model.preset().submit_us : 0.0);
    switch (p.metric) {
        case PointMetric::time_us: return us;
        case PointMetric::tops: return 2.0 * t.useful_macs / us / 1e6;
        case PointMetric::weight_gbs: return p.shape.weight_bytes / us / 1e3;
    }
    return 0;
}

NpuPreset with_tier(NpuPreset preset, EfficiencyTier tier) {
    preset.tier = tier;
    preset.array_efficiency = 0;
    return preset;
}

double modelled_value_in_tier(const CalibrationPoint & p, const NpuPreset & preset) {
    return modelled_value(p, TimingModel(with_tier(preset, p.tier)));
}

double error_pct(const CalibrationPoint & p, const NpuPreset & preset) {
    return 100.0 * (modelled_value_in_tier(p, preset) - p.published) / p.published;
}

double fit_tier_efficiency(const NpuPreset & preset, EfficiencyTier tier) {
    const char * name = tier == EfficiencyTier::assembly_tuned ? kAsmPoint
                      : tier == EfficiencyTier::competent_cpp  ? kCppPoint
                                                               : kFirstPoint;
    const CalibrationPoint & p = point_named(name);
    // The modelled rate grows with the efficiency (compute-bound points): bisect for the published one.
    double lo = 1e-3, hi = 1.0;
    for (int i = 0; i < 60; ++i) {
        const double mid = 0.5 * (lo + hi);
        NpuPreset q = with_tier(preset, tier);
        q.array_efficiency = mid;
        (modelled_value(p, TimingModel(q)) < p.published ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

double fit_dram_gbs(const NpuPreset & preset) {
    // The point is DRAM-bound: weight bytes / (traffic / bw + invocation) = published.
    const CalibrationPoint & p = point_named(kBwPoint);
    const ModelledTime t = TimingModel(preset).invocation(p.shape);
    const double kernel_us = p.shape.weight_bytes / (p.published * 1e3);
    return t.dram_bytes / ((kernel_us - preset.invocation_us) * 1e3);
}

}  // namespace xdna
