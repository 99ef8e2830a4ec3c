#include "sim/core-locks.h"

namespace xdna {

namespace {

std::string lock_name(const DesignDescription & d) { return "lock " + std::to_string(d.barrier_lock); }

// Whether the acquire lets the core through with the lock at `value` (UG1583, Locks: acquire_equal
// waits for equality; acquire_greater_equal for at least the value).
bool acquire_open(const DesignDescription & d, uint32_t value) {
    return d.barrier_acquire_ge ? value >= d.barrier_acquire_value : value == d.barrier_acquire_value;
}

uint32_t word(const CoreSide & c, uint32_t address) {
    auto it = c.memory.find(address);
    return it == c.memory.end() ? 0u : it->second;
}

}  // namespace

void load_design(const DesignDescription & d, const std::string & family, int tile_n, LoadedDesign & out) {
    out = LoadedDesign{};
    out.family = family;
    out.tile_n = tile_n;
    out.columns = d.max_columns;
    out.rows = d.core_rows;
    out.cores.assign(static_cast<size_t>(d.max_columns) * d.core_rows, CoreSide{});
}

bool barrier_set(const DesignDescription & d, CoreSide & core, uint32_t value, std::string & error) {
    if (value > d.lock_max_value) {
        error = "writes " + std::to_string(value) + " into " + lock_name(d) + ", which holds 0.." + std::to_string(d.lock_max_value);
        return false;
    }
    core.lock = value;
    ++core.sets;
    core.passes_at_set = core.passes;
    if (core.phase == CoreSide::Phase::spinning) {
        core.phase = CoreSide::Phase::waiting;  // a changed lock: the next acquire decides again
    }
    barrier_try_pass(d, core, error);
    return error.empty();
}

bool barrier_try_pass(const DesignDescription & d, CoreSide & core, std::string & error) {
    if (core.phase != CoreSide::Phase::waiting || !acquire_open(d, core.lock)) {
        return false;
    }
    // Acquire: an equal acquire leaves the value, a greater-equal one takes the acquire value.
    uint32_t value = core.lock;
    if (d.barrier_acquire_ge) {
        value -= d.barrier_acquire_value;
    }
    // The RTP words, read between the acquire and the release (design.py core_fn).
    const uint32_t base = d.rtp_core_address;
    core.params.words.resize(static_cast<size_t>(d.rtp_word_count));
    for (int i = 0; i < d.rtp_word_count; ++i) {
        core.params.words[i] = word(core, base + 4 * static_cast<uint32_t>(i));
    }
    auto named = [&](int index) { return index < 0 ? 0u : core.params.words[index]; };
    core.params.contract = named(d.rtp_contract);
    core.params.out_tiles = named(d.rtp_out_tiles);
    core.params.k_tiles = named(d.rtp_k_tiles);
    core.params.version = named(d.rtp_version);
    // Release: adds its value.
    if (value + d.barrier_release_value > d.lock_max_value) {
        error = "the core's release takes " + lock_name(d) + " from " + std::to_string(value) + " to " +
                std::to_string(value + d.barrier_release_value) + ", past its largest value " + std::to_string(d.lock_max_value);
        return false;
    }
    core.lock = value + d.barrier_release_value;
    core.phase = CoreSide::Phase::running;
    ++core.passes;
    return true;
}

bool barrier_pass_done(const DesignDescription & d, CoreSide & core, bool worked, std::string & error) {
    const uint32_t lock_before = core.lock;
    core.phase = CoreSide::Phase::waiting;
    const CoreParams before = core.params;
    if (!barrier_try_pass(d, core, error)) {
        return false;
    }
    // It passed again at once. Without work, and with the lock and the words as they were, every further
    // pass is the same one: the core spins through its barrier (an NPU core would loop forever).
    if (!worked && core.lock == lock_before && core.params.words == before.words) {
        core.phase = CoreSide::Phase::spinning;
    }
    return true;
}

std::string core_memory_write_hazard(const DesignDescription & d, const CoreSide & core, uint32_t offset) {
    if (core.phase == CoreSide::Phase::waiting) {
        return "";
    }
    const bool rtp = offset >= d.rtp_core_address && offset < d.rtp_core_address + 4u * d.rtp_word_count;
    const std::string state = describe_core(d, core);
    if (!rtp) {
        return "core memory written while the core program runs (" + state + ")";
    }
    std::string why = "the stream writes RTP words the core has already read for the pass it is on (" + state + "): the core ";
    if (core.passes > core.passes_at_set + 1) {
        // A pass with no set since the one before: the acquire found the lock still open.
        why += "passed its barrier again without a new set, because " + lock_name(d) + " still let it through after the last pass";
        if (!d.barrier_acquire_ge && d.barrier_release_value == 0) {
            why += " (the core program does not release the barrier after reading the words)";
        }
        return why + ", so it runs with the previous invocation's parameters";
    }
    return why + "passed the barrier set before these words were written, so it runs without them";
}

// The pass's words: the matmul's as its tiles, any other design's by name (the version left out).
static std::string describe_words(const DesignDescription & d, const CoreParams & p) {
    if (d.rtp_out_tiles >= 0 && d.rtp_k_tiles >= 0) {
        return "contract " + std::to_string(p.contract) + ", " + std::to_string(p.out_tiles) + " output tiles x " +
               std::to_string(p.k_tiles) + " K tiles";
    }
    std::string s = "contract " + std::to_string(p.contract);
    for (size_t i = 0; i < p.words.size() && i < d.rtp_names.size(); ++i) {
        if (static_cast<int>(i) != d.rtp_contract && static_cast<int>(i) != d.rtp_version) {
            s += ", " + d.rtp_names[i] + " " + std::to_string(p.words[i]);
        }
    }
    return s;
}

std::string describe_core(const DesignDescription & d, const CoreSide & core) {
    const std::string lk = lock_name(d) + " holds " + std::to_string(core.lock);
    switch (core.phase) {
        case CoreSide::Phase::waiting:
            return "waits for " + lock_name(d) + (d.barrier_acquire_ge ? " >= " : " == ") + std::to_string(d.barrier_acquire_value) +
                   ", it holds " + std::to_string(core.lock);
        case CoreSide::Phase::running:
            return "runs " + describe_words(d, core.params) + "; " + lk;
        case CoreSide::Phase::spinning:
            return "spins through its barrier with " + describe_words(d, core.params) + "; " + lk;
    }
    return "";
}

}  // namespace xdna
