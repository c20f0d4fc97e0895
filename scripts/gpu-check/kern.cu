// The kernel library of the GPU check (scripts/gpu-check.sh): one kernel, built for several SMs,
// whose answer does not depend on which of its entries the runtime picked, and which says which
// one ran (__CUDA_ARCH__ of the code that ran: a cubin's SM, or the PTX's virtual arch).
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void square_sum(unsigned long long *out, int *arch, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned long long v = (unsigned long long)(i % 1000);
        atomicAdd(out, v * v);
    }
    if (i == 0) {
#ifdef __CUDA_ARCH__
        *arch = __CUDA_ARCH__;
#endif
    }
}

// Runs the kernel over n threads. Returns the CUDA error code (0: ran), with the error's
// text in msg; the sum and the __CUDA_ARCH__ that ran in *sum and *arch.
extern "C" int kern_run(int n, unsigned long long *sum, int *arch, char *msg, int len) {
    unsigned long long *d_sum = 0;
    int *d_arch = 0;
    cudaError_t e = cudaMalloc(&d_sum, sizeof *d_sum);
    if (e == cudaSuccess) e = cudaMalloc(&d_arch, sizeof *d_arch);
    if (e == cudaSuccess) e = cudaMemset(d_sum, 0, sizeof *d_sum);
    if (e == cudaSuccess) e = cudaMemset(d_arch, 0, sizeof *d_arch);
    if (e == cudaSuccess) {
        square_sum<<<(n + 255) / 256, 256>>>(d_sum, d_arch, n);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaMemcpy(sum, d_sum, sizeof *sum, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) e = cudaMemcpy(arch, d_arch, sizeof *arch, cudaMemcpyDeviceToHost);
    snprintf(msg, len, "%s", cudaGetErrorString(e));
    cudaFree(d_sum);
    cudaFree(d_arch);
    return (int)e;
}
