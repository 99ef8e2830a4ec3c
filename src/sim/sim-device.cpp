#include "sim-device.h"

#include "sim-matmul.h"

#include <cstdlib>
#include <new>

namespace xdna {

namespace {

// Page-aligned host memory, as XRT's host_only buffer objects are.
class SimBuffer final : public DeviceBuffer {
public:
    static constexpr size_t kAlign = 4096;

    explicit SimBuffer(size_t bytes) : size_(bytes) {
        const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
        data_ = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
    }
    ~SimBuffer() override { std::free(data_); }

    bool   valid() const { return data_ != nullptr; }
    void * host_ptr() override { return data_; }
    size_t size() const override { return size_; }
    void   sync_to_device(size_t, size_t) override {}    // one coherent memory
    void   sync_from_device(size_t, size_t) override {}

private:
    void * data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace

SimDevice::SimDevice(int n_threads) : pool_(n_threads) {
    info_.name = "XDNA0";
    info_.description = "XDNA2 simulator, 8x4 tiles";
    info_.columns = 8;
    info_.rows = 4;
    info_.simulated = true;
}

std::unique_ptr<DeviceBuffer> SimDevice::allocate(size_t bytes, BufferRole) {
    auto buf = std::make_unique<SimBuffer>(bytes);
    if (!buf->valid()) {
        return nullptr;
    }
    return buf;
}

bool SimDevice::has_kernel(const MatmulContract & contract, const TileShape & tile) const {
    // The simulator implements every contract at every tile shape the contract allows.
    if (tile.m != contract.tile_m || tile.k != contract.tile_k) {
        return false;
    }
    for (int n : contract.tile_n) {
        if (n == tile.n) {
            return true;
        }
    }
    return false;
}

Status SimDevice::run(const Batch & batch, std::chrono::milliseconds) {
    stats_.clear();
    for (const auto & inv : batch.matmuls) {
        if (inv.contract == nullptr || !has_kernel(*inv.contract, inv.tile)) {
            return Status::error("no simulated kernel for this contract and tile shape");
        }
        stats_.push_back({inv.macs(), inv.weight_bytes() + inv.activation_bytes(), inv.out_bytes()});
    }
    sim_run_matmuls(batch.matmuls, pool_);
    return Status::success();
}

}  // namespace xdna
