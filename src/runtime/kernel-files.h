// Sanity checks of the files a kernel manifest names, done before anything reaches XRT.
//
// XRT's own errors for a corrupt xclbin or instruction stream are either vague or, for the
// instruction stream, absent: the NPU runs whatever words it is given. So the runtime rejects files
// that cannot be right up front, with a reason naming what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xdna {

// Size in bytes of the xclbin ("axlf") header up to and including its inline header, and the offset of
// the total-length field inside it (see xclbin.h in XRT: struct axlf, struct axlf_header).
constexpr size_t kXclbinMinBytes = 456;
constexpr size_t kXclbinLengthOffset = 304;

// Empty when `path` looks like a whole xclbin: readable, "xclbin2" magic, and at least as long as the
// length its header records. Otherwise the reason, e.g. "is truncated: 4096 bytes, header says 81920".
std::string check_xclbin_file(const std::string & path);

// Empty when `path` is a readable, non-empty sequence of 32-bit words. Otherwise the reason.
std::string check_instruction_file(const std::string & path);

// Read an instruction file (host-endian 32-bit words). False with `err` set on failure.
bool read_instruction_file(const std::string & path, std::vector<uint32_t> & words, std::string & err);

}  // namespace xdna
