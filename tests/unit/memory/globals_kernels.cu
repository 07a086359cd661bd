// tests/unit/memory/globals_kernels.cu - compiled to a cubin by nvcc at build time (no GPU
// needed) so that globals_test.c reads the symbol table of a real cubin: which names
// memory/globals.c must learn (__device__ variables, static or not, initialised or not)
// and which it must not (__constant__ memory, which kernels cannot write; functions).
__device__ int g_counter;
__device__ float g_table[1000];
static __device__ double s_hidden[4];
__device__ int g_initialised = 42;
__constant__ float c_coeff[16];
__device__ int *g_ptr = nullptr;
__global__ void touch(float *x)
{
	g_counter++;
	g_table[threadIdx.x] += x[0] * c_coeff[0];
	s_hidden[0] += g_initialised;
	*g_ptr = 1;
}
