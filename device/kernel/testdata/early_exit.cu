// early_exit.cu: kernels that return early, as `if (i >= n) return;`
// writes it, before the rest of the block or warp synchronizes. Correct
// CUDA C that runs on a GPU: the PTX ISA's exit releases a barrier that
// waits only on exited threads, and the Programming Guide's warp functions
// need only "all non-exited threads named in mask". make example-ptx
// compiles it into early_exit.ptx (nvcc -ptx, compute_70).

// block_sum_early_return: each of a block's first n threads puts its
// element in shared memory, the others return; after __syncthreads()
// thread 0 sums the n and writes the block's sum to out[blockIdx.x].
extern "C" __global__ void block_sum_early_return(const float *x, float *out, int n)
{
    __shared__ float s[256];
    int i = threadIdx.x;
    if (i >= n) {
        return;
    }
    s[i] = x[blockIdx.x * n + i];
    __syncthreads();
    if (i == 0) {
        float sum = 0;
        for (int j = 0; j < n; j++) {
            sum += s[j];
        }
        out[blockIdx.x] = sum;
    }
}

// warp_sum_early_return: threads past n return; each warp left sums its
// elements with full-mask shuffles, keeping only what came from a lane
// that is there, counts its positive elements with a full-mask ballot, and
// its lane 0 writes both: out[2*w] the sum, out[2*w+1] the count.
extern "C" __global__ void warp_sum_early_return(const float *x, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    int lane = threadIdx.x & 31;
    int active = min(32, n - (i - lane)); // lanes of this warp that did not return
    float v = x[i];
    unsigned positive = __ballot_sync(0xffffffff, v > 0);
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_down_sync(0xffffffff, v, off);
        if (lane + off < active) {
            v += o;
        }
    }
    if (lane == 0) {
        int w = i / 32;
        out[2 * w] = v;
        out[2 * w + 1] = (float)__popc(positive);
    }
}
