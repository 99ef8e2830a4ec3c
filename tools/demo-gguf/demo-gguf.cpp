#include "demo-gguf.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace demo_gguf {

void die(const char * tool, const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", tool);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

namespace {

void copy_kv(const char * tool, gguf_context * dst, const gguf_context * src, int64_t id) {
    const char * key = gguf_get_key(src, id);
    switch (gguf_get_kv_type(src, id)) {
        case GGUF_TYPE_UINT8:   gguf_set_val_u8  (dst, key, gguf_get_val_u8  (src, id)); break;
        case GGUF_TYPE_INT8:    gguf_set_val_i8  (dst, key, gguf_get_val_i8  (src, id)); break;
        case GGUF_TYPE_UINT16:  gguf_set_val_u16 (dst, key, gguf_get_val_u16 (src, id)); break;
        case GGUF_TYPE_INT16:   gguf_set_val_i16 (dst, key, gguf_get_val_i16 (src, id)); break;
        case GGUF_TYPE_UINT32:  gguf_set_val_u32 (dst, key, gguf_get_val_u32 (src, id)); break;
        case GGUF_TYPE_INT32:   gguf_set_val_i32 (dst, key, gguf_get_val_i32 (src, id)); break;
        case GGUF_TYPE_FLOAT32: gguf_set_val_f32 (dst, key, gguf_get_val_f32 (src, id)); break;
        case GGUF_TYPE_UINT64:  gguf_set_val_u64 (dst, key, gguf_get_val_u64 (src, id)); break;
        case GGUF_TYPE_INT64:   gguf_set_val_i64 (dst, key, gguf_get_val_i64 (src, id)); break;
        case GGUF_TYPE_FLOAT64: gguf_set_val_f64 (dst, key, gguf_get_val_f64 (src, id)); break;
        case GGUF_TYPE_BOOL:    gguf_set_val_bool(dst, key, gguf_get_val_bool(src, id)); break;
        case GGUF_TYPE_STRING:  gguf_set_val_str (dst, key, gguf_get_val_str (src, id)); break;
        case GGUF_TYPE_ARRAY: {
            const gguf_type at = gguf_get_arr_type(src, id);
            const size_t n = gguf_get_arr_n(src, id);
            if (at == GGUF_TYPE_STRING) {
                std::vector<const char *> strs(n);
                for (size_t i = 0; i < n; ++i) {
                    strs[i] = gguf_get_arr_str(src, id, i);
                }
                gguf_set_arr_str(dst, key, strs.data(), n);
            } else if (at == GGUF_TYPE_ARRAY) {
                die(tool, "vocab key '%s' is a nested array, which is not supported", key);
            } else {
                gguf_set_arr_data(dst, key, at, gguf_get_arr_data(src, id), n);
            }
            break;
        }
        default:
            die(tool, "vocab key '%s' has unsupported type %d", key, (int) gguf_get_kv_type(src, id));
    }
}

void write_all(const char * tool, FILE * f, const void * data, size_t n, const std::string & path) {
    if (n > 0 && fwrite(data, 1, n, f) != n) {
        const int err = errno;
        remove(path.c_str());
        die(tool, "writing '%s' failed: %s", path.c_str(), strerror(err));
    }
}

}  // namespace

namespace {

gguf_context * open_vocab(const char * tool, const std::string & vocab_path, int64_t & n_vocab) {
    // gguf_init_from_file reports a missing file only through the ggml log, so check it here to name it.
    if (FILE * f = fopen(vocab_path.c_str(), "rb")) {
        fclose(f);
    } else {
        die(tool, "cannot open vocab file '%s': %s", vocab_path.c_str(), strerror(errno));
    }
    gguf_init_params vparams = { /*no_alloc =*/ true, /*ctx =*/ nullptr };
    gguf_context * vocab = gguf_init_from_file(vocab_path.c_str(), vparams);
    if (!vocab) {
        die(tool, "'%s' is not a valid GGUF file", vocab_path.c_str());
    }
    const int64_t tokens_id = gguf_find_key(vocab, "tokenizer.ggml.tokens");
    if (tokens_id < 0 || gguf_get_kv_type(vocab, tokens_id) != GGUF_TYPE_ARRAY) {
        die(tool, "'%s' has no tokenizer.ggml.tokens array; expected a llama.cpp vocab file", vocab_path.c_str());
    }
    n_vocab = int64_t(gguf_get_arr_n(vocab, tokens_id));
    return vocab;
}

}  // namespace

int64_t vocab_size(const char * tool, const std::string & vocab_path) {
    int64_t n_vocab = 0;
    gguf_free(open_vocab(tool, vocab_path, n_vocab));
    return n_vocab;
}

int64_t copy_tokenizer(const char * tool, gguf_context * dst, const std::string & vocab_path) {
    int64_t n_vocab = 0;
    gguf_context * vocab = open_vocab(tool, vocab_path, n_vocab);
    for (int64_t i = 0; i < gguf_get_n_kv(vocab); ++i) {
        if (strncmp(gguf_get_key(vocab, i), "tokenizer.", 10) == 0) {
            copy_kv(tool, dst, vocab, i);
        }
    }
    gguf_free(vocab);
    return n_vocab;
}

size_t write_file(const char * tool, gguf_context * g, const std::vector<ggml_tensor *> & tensors,
                  const std::string & out, const std::function<void(size_t, std::vector<uint8_t> &)> & fill) {
    const std::string tmp = out + ".tmp";
    FILE * f = fopen(tmp.c_str(), "wb");
    if (!f) {
        die(tool, "cannot create '%s': %s", tmp.c_str(), strerror(errno));
    }
    std::vector<uint8_t> meta(gguf_get_meta_size(g));
    gguf_get_meta_data(g, meta.data());
    write_all(tool, f, meta.data(), meta.size(), tmp);

    const size_t align = gguf_get_alignment(g);
    const std::vector<uint8_t> zeros(align, 0);
    std::vector<uint8_t> data;
    size_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        if (offset != gguf_get_tensor_offset(g, int64_t(i))) {
            die(tool, "internal error: tensor %s at offset %zu, expected %zu", ggml_get_name(tensors[i]), offset,
                gguf_get_tensor_offset(g, int64_t(i)));
        }
        data.clear();
        fill(i, data);
        if (data.size() != ggml_nbytes(tensors[i])) {
            die(tool, "internal error: tensor %s has %zu bytes of data, expected %zu", ggml_get_name(tensors[i]),
                data.size(), ggml_nbytes(tensors[i]));
        }
        write_all(tool, f, data.data(), data.size(), tmp);
        const size_t pad = GGML_PAD(data.size(), align) - data.size();
        write_all(tool, f, zeros.data(), pad, tmp);
        offset += data.size() + pad;
    }
    if (fclose(f) != 0) {
        const int err = errno;
        remove(tmp.c_str());
        die(tool, "writing '%s' failed: %s", tmp.c_str(), strerror(err));
    }
    if (rename(tmp.c_str(), out.c_str()) != 0) {
        die(tool, "cannot rename '%s' to '%s': %s", tmp.c_str(), out.c_str(), strerror(errno));
    }
    return meta.size() + offset;
}

}  // namespace demo_gguf
