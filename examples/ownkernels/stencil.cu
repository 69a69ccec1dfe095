// stencil.cu: a 5-point Laplacian of a height×width float image, each
// block staging its tile and a one-pixel halo in shared memory: the
// guide's second kernel ("Your own kernels", docs/guide.md). Edge pixels
// read their missing neighbours as 0. The tile is TILE×TILE threads; the
// shared array, (TILE+2)² floats, is dynamic (the launch's shared bytes).
// make example-ptx compiles it into stencil.ptx (nvcc -ptx, compute_70).
#define TILE 16

__device__ static float at(const float *in, int height, int width, int r, int c)
{
    return (r >= 0 && r < height && c >= 0 && c < width) ? in[r * width + c] : 0.0f;
}

extern "C" __global__ void laplacian(const float *in, float *out, int height, int width)
{
    extern __shared__ float tile[]; // (TILE+2) × (TILE+2)
    const int S = TILE + 2;
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * TILE + tx, r = blockIdx.y * TILE + ty;

    tile[(ty + 1) * S + tx + 1] = at(in, height, width, r, c);
    if (tx == 0) tile[(ty + 1) * S] = at(in, height, width, r, c - 1);
    if (tx == TILE - 1) tile[(ty + 1) * S + TILE + 1] = at(in, height, width, r, c + 1);
    if (ty == 0) tile[tx + 1] = at(in, height, width, r - 1, c);
    if (ty == TILE - 1) tile[(TILE + 1) * S + tx + 1] = at(in, height, width, r + 1, c);
    __syncthreads();

    if (r < height && c < width) {
        float centre = tile[(ty + 1) * S + tx + 1];
        out[r * width + c] = tile[ty * S + tx + 1] + tile[(ty + 2) * S + tx + 1]
            + tile[(ty + 1) * S + tx] + tile[(ty + 1) * S + tx + 2] - 4.0f * centre;
    }
}
