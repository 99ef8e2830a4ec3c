# XDNA_SANITIZE: build this tree instrumented (a build directory of its own; scripts/sanitize.sh makes them).
#   address  AddressSanitizer + UndefinedBehaviorSanitizer (any undefined behaviour aborts the test)
#   thread   ThreadSanitizer
#   fuzz     libFuzzer + ASan + UBSan; needs clang (CMAKE_CXX_COMPILER=clang++); builds the fuzzers of
#            tests/fuzz (CTest label fuzz)
# The prebuilt llama.cpp libraries are not instrumented: ASan and UBSan check our code and what it does
# to memory; TSan sees our threads (the tests it runs do not use ggml's CPU thread pool).
set(XDNA_SANITIZE "" CACHE STRING "instrument the build: address, thread or fuzz (empty: none)")
set_property(CACHE XDNA_SANITIZE PROPERTY STRINGS "" address thread fuzz)

if(XDNA_SANITIZE STREQUAL "address")
    set(_xdna_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(XDNA_SANITIZE STREQUAL "thread")
    set(_xdna_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(XDNA_SANITIZE STREQUAL "fuzz")
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "XDNA_SANITIZE=fuzz needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
    endif()
    # Coverage instrumentation everywhere; the libFuzzer driver is linked into the fuzzers only.
    set(_xdna_san -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(NOT XDNA_SANITIZE STREQUAL "")
    message(FATAL_ERROR "XDNA_SANITIZE='${XDNA_SANITIZE}': accepted values are address, thread, fuzz")
endif()

if(_xdna_san)
    # -g1: line tables only. The sanitizers' reports need file and line per frame, not variables and
    # types; full -g made the heaviest translation unit (the kernel tests) take 294 s instead of 177 s.
    # -O1 after the build type's -O3 (the last -O wins): the instrumented builds exist to find bugs, not to
    # run fast, and at -O3 the kernels' host code is most of their build. With ASan+UBSan at -O3 against
    # -O1: aie/flash_attn/kernels/flash_attn.cc 30.7 s against 5.0 s, mm_kquant_bfp16.cc 13.8 s against
    # 5.8 s. -O1 is also the level the sanitizers' own documentation suggests.
    add_compile_options(${_xdna_san} -g1 -O1)
    string(REPLACE "fuzzer-no-link," "" _xdna_san_link "${_xdna_san}")
    add_link_options(${_xdna_san_link})
endif()
