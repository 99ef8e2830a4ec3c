// What the demo-model tools share: copying llama.cpp's tokenizer from a vocab file into a new GGUF,
// and writing a GGUF whose tensor data is produced one tensor at a time.
#pragma once

#include "ggml.h"
#include "gguf.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace demo_gguf {

[[noreturn]] void die(const char * tool, const char * fmt, ...) __attribute__((format(printf, 2, 3)));

// Copies every tokenizer.* key of a llama.cpp vocab file (models/ggml-vocab-*.gguf) into dst and returns
// the vocabulary size. The vocab file also carries general.* and <arch>.* keys of the model it came from,
// which must not override the new model's, so only tokenizer.* keys are copied.
int64_t copy_tokenizer(const char * tool, gguf_context * dst, const std::string & vocab_path);

// The vocabulary size of a llama.cpp vocab file (dies with a clear message if it is not one).
int64_t vocab_size(const char * tool, const std::string & vocab_path);

// Writes g's metadata and then, for each tensor added to g in order, the bytes fill(i, out) produces
// (exactly ggml_nbytes of the tensor). Written under a temporary name and renamed at the end, so an
// interrupted run never leaves a truncated file that a caller skipping existing outputs would take for a
// finished one. Returns the file size in bytes.
size_t write_file(const char * tool, gguf_context * g, const std::vector<ggml_tensor *> & tensors,
                  const std::string & out, const std::function<void(size_t, std::vector<uint8_t> &)> & fill);

}  // namespace demo_gguf
