// Temporary directories and generated kernel files for the runtime tests.
#pragma once

#include "runtime/kernel-files.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace xdna_test {

// A fresh directory under the system temp dir, removed with everything in it at destruction.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "xdna-runtime-test-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            ADD_FAILURE() << "mkdtemp failed";
        }
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir & operator=(const TempDir &) = delete;

    const std::string & path() const { return path_; }
    std::string operator/(const std::string & name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

inline void write_file(const std::string & path, const std::string & bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << path;
}

// Bytes of a minimal well-formed xclbin header of `total` bytes (total >= kXclbinMinBytes), whose
// recorded length is `recorded` (defaults to total).
inline std::string fake_xclbin(size_t total = 1024, uint64_t recorded = 0) {
    std::string b(total, '\0');
    std::memcpy(b.data(), "xclbin2", 8);
    const uint64_t len = recorded ? recorded : total;
    std::memcpy(b.data() + xdna::kXclbinLengthOffset, &len, sizeof(len));
    return b;
}

inline std::string fake_instructions(size_t words = 16) {
    std::vector<uint32_t> w(words);
    for (size_t i = 0; i < words; ++i) {
        w[i] = 0x06030100u + static_cast<uint32_t>(i);
    }
    return std::string(reinterpret_cast<const char *>(w.data()), w.size() * sizeof(uint32_t));
}

}  // namespace xdna_test
