// Shared by the CUDA C references in bench/: stop with file, line, call and CUDA's message on any
// error, so a reference never prints a figure measured after a failure.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                    \
    do {                                                                               \
        cudaError_t err_ = (call);                                                     \
        if (err_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(err_));                                         \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
