#include "runtime/kernel-files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

namespace xdna {

namespace {

// Size of a regular file, or a reason why it has none.
bool regular_file_size(const std::string & path, uint64_t & size, std::string & err) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        err = errno == ENOENT ? "does not exist" : std::string("cannot be read: ") + std::strerror(errno);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        err = "is not a regular file";
        return false;
    }
    size = static_cast<uint64_t>(st.st_size);
    return true;
}

}  // namespace

std::string check_xclbin_file(const std::string & path) {
    std::string err;
    uint64_t    size = 0;
    if (!regular_file_size(path, size, err)) {
        return err;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        return std::string("cannot be opened: ") + std::strerror(errno);
    }
    if (size < kXclbinMinBytes) {
        return "is truncated or not an xclbin: " + std::to_string(size) + " bytes, an xclbin header alone has " +
               std::to_string(kXclbinMinBytes);
    }
    char header[kXclbinMinBytes];
    if (!f.read(header, sizeof(header))) {
        return "cannot be read";
    }
    if (std::memcmp(header, "xclbin2", 8) != 0) {
        return "is not an xclbin (no \"xclbin2\" magic at its start)";
    }
    uint64_t length = 0;  // little-endian on every host XRT supports
    std::memcpy(&length, header + kXclbinLengthOffset, sizeof(length));
    if (length < kXclbinMinBytes) {
        return "is corrupt: its header records a length of " + std::to_string(length) + " bytes";
    }
    if (size < length) {
        return "is truncated: " + std::to_string(size) + " bytes, its header says " + std::to_string(length);
    }
    return {};
}

std::string check_instruction_file(const std::string & path) {
    std::string err;
    uint64_t    size = 0;
    if (!regular_file_size(path, size, err)) {
        return err;
    }
    if (size == 0) {
        return "is empty";
    }
    if (size % sizeof(uint32_t) != 0) {
        return "is truncated or corrupt: " + std::to_string(size) +
               " bytes is not a whole number of 32-bit instruction words";
    }
    return {};
}

bool read_instruction_file(const std::string & path, std::vector<uint32_t> & words, std::string & err) {
    err = check_instruction_file(path);
    if (!err.empty()) {
        return false;
    }
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f) {
        err = std::string("cannot be opened: ") + std::strerror(errno);
        return false;
    }
    const auto bytes = static_cast<size_t>(f.tellg());
    if (bytes == 0 || bytes % sizeof(uint32_t) != 0) {
        err = "changed while being read";  // checked above; the file was replaced in between
        return false;
    }
    words.resize(bytes / sizeof(uint32_t));
    f.seekg(0);
    if (!f.read(reinterpret_cast<char *>(words.data()), static_cast<std::streamsize>(bytes))) {
        err = "cannot be read";
        return false;
    }
    return true;
}

}  // namespace xdna
