/* Compile-time proof that kernels/opencl/cl_abi.h agrees with Khronos' headers (built by tests/e2e/opencl.sh). */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include "cl_abi.h"

#define SAME(a, b) _Static_assert((long long) (a) == (long long) (b), #a " != " #b)
#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), "sizeof " #a " != sizeof " #b)

SAME_SIZE(ggcl_int, cl_int);
SAME_SIZE(ggcl_uint, cl_uint);
SAME_SIZE(ggcl_ulong, cl_ulong);
SAME_SIZE(ggcl_command_queue_properties, cl_command_queue_properties);
SAME_SIZE(ggcl_queue_properties, cl_queue_properties);
SAME_SIZE(ggcl_device_type, cl_device_type);
SAME_SIZE(ggcl_info, cl_profiling_info);
SAME_SIZE(ggcl_info, cl_kernel_info);
SAME_SIZE(ggcl_info, cl_event_info);
SAME_SIZE(ggcl_info, cl_device_info);
SAME_SIZE(ggcl_info, cl_command_queue_info);
SAME(GGCL_SUCCESS, CL_SUCCESS);
SAME(GGCL_PROFILING_INFO_NOT_AVAILABLE, CL_PROFILING_INFO_NOT_AVAILABLE);
SAME(GGCL_INVALID_VALUE, CL_INVALID_VALUE);
SAME(GGCL_INVALID_OPERATION, CL_INVALID_OPERATION);
SAME(GGCL_COMPLETE, CL_COMPLETE);
SAME(GGCL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
SAME(GGCL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROFILING_ENABLE);
SAME(GGCL_QUEUE_ON_DEVICE, CL_QUEUE_ON_DEVICE);
SAME(GGCL_PLATFORM_VERSION, CL_PLATFORM_VERSION);
SAME(GGCL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_ALL);
SAME(GGCL_DEVICE_NAME, CL_DEVICE_NAME);
SAME(GGCL_DEVICE_PLATFORM, CL_DEVICE_PLATFORM);
SAME(GGCL_QUEUE_CONTEXT, CL_QUEUE_CONTEXT);
SAME(GGCL_QUEUE_DEVICE, CL_QUEUE_DEVICE);
SAME(GGCL_QUEUE_PROPERTIES, CL_QUEUE_PROPERTIES);
SAME(GGCL_KERNEL_FUNCTION_NAME, CL_KERNEL_FUNCTION_NAME);
SAME(GGCL_EVENT_COMMAND_EXECUTION_STATUS, CL_EVENT_COMMAND_EXECUTION_STATUS);
SAME(GGCL_PROFILING_COMMAND_QUEUED, CL_PROFILING_COMMAND_QUEUED);
SAME(GGCL_PROFILING_COMMAND_SUBMIT, CL_PROFILING_COMMAND_SUBMIT);
SAME(GGCL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_START);
SAME(GGCL_PROFILING_COMMAND_END, CL_PROFILING_COMMAND_END);

/* The functions cl_trace.c stands in for or calls: each initialisation compiles (with -Werror) only when
 * Khronos' prototype is the function type cl_abi.h declares. */
ggcl_create_queue_fn       *const f_create_queue       = clCreateCommandQueue;
ggcl_create_queue_props_fn *const f_create_queue_props = clCreateCommandQueueWithProperties;
ggcl_enqueue_ndrange_fn    *const f_ndrange            = clEnqueueNDRangeKernel;
ggcl_enqueue_task_fn       *const f_task               = clEnqueueTask;
ggcl_marker_fn             *const f_marker             = clEnqueueMarkerWithWaitList;
ggcl_queue_fn              *const f_finish             = clFinish;
ggcl_queue_fn              *const f_release_queue      = clReleaseCommandQueue;
ggcl_event_fn              *const f_retain_event       = clRetainEvent;
ggcl_event_fn              *const f_release_event      = clReleaseEvent;
ggcl_wait_fn               *const f_wait               = clWaitForEvents;
ggcl_event_info_fn         *const f_profiling          = clGetEventProfilingInfo;
ggcl_event_info_fn         *const f_event_info         = clGetEventInfo;
ggcl_kernel_info_fn        *const f_kernel_info        = clGetKernelInfo;
ggcl_queue_info_fn         *const f_queue_info         = clGetCommandQueueInfo;
ggcl_device_info_fn        *const f_device_info        = clGetDeviceInfo;
ggcl_device_ids_fn         *const f_device_ids         = clGetDeviceIDs;
ggcl_device_host_timer_fn  *const f_device_host_timer  = clGetDeviceAndHostTimer;

int main(void) { return 0; }
