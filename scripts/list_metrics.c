/* scripts/list_metrics.c - rangeprof-list-metrics, run by 'rangeprof --list-metrics':
 * prints the metrics the first CUDA device supports, with units and descriptions.
 * A separate program so that the launcher itself never needs CUDA. Calls collector/. */
#include <stdio.h>

#include "collector/api.h"
#include "collector/profiler.h"
#include "common/log.h"

int main(void)
{
	char err[2048];
	if (collector_api_load("/usr/local/cuda/lib64", err, sizeof(err))) {
		rp_log_error("--list-metrics: %s", err);
		return 1;
	}
	CUresult r;
	CUdevice dev;
	CUcontext ctx;
	if ((r = rp_api.cuInit(0)) != CUDA_SUCCESS || (r = rp_api.cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
	    (r = rp_api.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
	    (r = rp_api.cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) {
		rp_log_error("--list-metrics: no usable CUDA device: %s", collector_cu_error(r));
		return 1;
	}
	if (collector_list_metrics(ctx, 0, err, sizeof(err))) {
		rp_log_error("--list-metrics: %s", err);
		return 1;
	}
	rp_api.cuDevicePrimaryCtxRelease(dev);
	return 0;
}
