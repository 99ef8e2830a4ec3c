# Imported targets for the pinned llama.cpp tree built by scripts/llama-cpp.sh.
#
# The backend must be compiled against the exact tree it is loaded into: ggml-backend-impl.h is a
# private header whose structs nothing checks at load time, so LLAMA_CPP_DIR points at that tree
# (src/ with the sources, build/ with the shared libraries).

set(LLAMA_CPP_DIR "" CACHE PATH "llama.cpp cache directory made by scripts/llama-cpp.sh (holds src/ and build/)")
if(NOT LLAMA_CPP_DIR OR NOT EXISTS "${LLAMA_CPP_DIR}/build/.ok")
    message(FATAL_ERROR "LLAMA_CPP_DIR must name a built llama.cpp cache; run scripts/llama-cpp.sh first")
endif()
set(LLAMA_CPP_SRC   "${LLAMA_CPP_DIR}/src")
set(LLAMA_CPP_BUILD "${LLAMA_CPP_DIR}/build")
set(LLAMA_CPP_BIN   "${LLAMA_CPP_BUILD}/bin")

function(_llama_import name lib includes)
    add_library(${name} SHARED IMPORTED GLOBAL)
    set_target_properties(${name} PROPERTIES
        IMPORTED_LOCATION "${LLAMA_CPP_BIN}/${lib}"
        INTERFACE_INCLUDE_DIRECTORIES "${includes}")
endfunction()

_llama_import(llama_cpp::ggml_base libggml-base.so "${LLAMA_CPP_SRC}/ggml/include")
_llama_import(llama_cpp::ggml_cpu  libggml-cpu.so  "${LLAMA_CPP_SRC}/ggml/include")
_llama_import(llama_cpp::ggml      libggml.so      "${LLAMA_CPP_SRC}/ggml/include")
_llama_import(llama_cpp::llama     libllama.so     "${LLAMA_CPP_SRC}/include;${LLAMA_CPP_SRC}/ggml/include")

# Private ggml headers (ggml-backend-impl.h, ggml-impl.h, ggml-common.h) for the backend itself.
add_library(llama_cpp::ggml_private INTERFACE IMPORTED GLOBAL)
set_target_properties(llama_cpp::ggml_private PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${LLAMA_CPP_SRC}/ggml/src")
