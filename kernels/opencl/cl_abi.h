/* The few OpenCL types and constants cl_trace.c needs, declared here so that ggprof never needs OpenCL headers. */
#ifndef GGPROF_CL_ABI_H
#define GGPROF_CL_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Prefixed (ggcl_, GGCL_) so that a file can include this and CL/cl.h together: tests/e2e/opencl.sh compiles
 * samples/opencl/abi_check.c, which asserts that every value below equals Khronos' own. Values are from the
 * OpenCL 3.0 headers; none has changed since the version that introduced it. */
typedef int32_t  ggcl_int;
typedef uint32_t ggcl_uint;
typedef uint64_t ggcl_ulong;
typedef ggcl_ulong ggcl_bitfield;
typedef ggcl_bitfield ggcl_command_queue_properties;
typedef ggcl_ulong ggcl_queue_properties; /* cl_properties since 3.0, cl_bitfield before: 64 bits either way */
typedef ggcl_bitfield ggcl_device_type;
typedef ggcl_uint ggcl_info; /* cl_profiling_info, cl_kernel_info, cl_event_info, cl_device_info, ... */

typedef struct _cl_platform_id   *ggcl_platform_id;
typedef struct _cl_device_id     *ggcl_device_id;
typedef struct _cl_context       *ggcl_context;
typedef struct _cl_command_queue *ggcl_command_queue;
typedef struct _cl_kernel        *ggcl_kernel;
typedef struct _cl_event         *ggcl_event;

#define GGCL_SUCCESS                   0
#define GGCL_PROFILING_INFO_NOT_AVAILABLE (-7)
#define GGCL_INVALID_VALUE             (-30)
#define GGCL_INVALID_OPERATION         (-59)

#define GGCL_COMPLETE                  0x0

#define GGCL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE (1 << 0)
#define GGCL_QUEUE_PROFILING_ENABLE    (1 << 1)
#define GGCL_QUEUE_ON_DEVICE           (1 << 2)

#define GGCL_PLATFORM_VERSION          0x0901
#define GGCL_DEVICE_TYPE_ALL           0xFFFFFFFF
#define GGCL_DEVICE_NAME               0x102B
#define GGCL_DEVICE_PLATFORM           0x1031
#define GGCL_QUEUE_CONTEXT             0x1090
#define GGCL_QUEUE_DEVICE              0x1091
#define GGCL_QUEUE_PROPERTIES          0x1093
#define GGCL_KERNEL_FUNCTION_NAME      0x1190
#define GGCL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3
#define GGCL_PROFILING_COMMAND_QUEUED  0x1280
#define GGCL_PROFILING_COMMAND_SUBMIT  0x1281
#define GGCL_PROFILING_COMMAND_START   0x1282
#define GGCL_PROFILING_COMMAND_END     0x1283

/* The functions cl_trace.c stands in for or calls, as function types: the wrappers are declared with them,
 * and abi_check.c assigns Khronos' functions to pointers of these types, which compiles only if they agree. */
typedef ggcl_command_queue ggcl_create_queue_fn(ggcl_context, ggcl_device_id, ggcl_command_queue_properties,
                                                ggcl_int *);
typedef ggcl_command_queue ggcl_create_queue_props_fn(ggcl_context, ggcl_device_id, const ggcl_queue_properties *,
                                                      ggcl_int *);
typedef ggcl_int ggcl_enqueue_ndrange_fn(ggcl_command_queue, ggcl_kernel, ggcl_uint, const size_t *, const size_t *,
                                         const size_t *, ggcl_uint, const ggcl_event *, ggcl_event *);
typedef ggcl_int ggcl_enqueue_task_fn(ggcl_command_queue, ggcl_kernel, ggcl_uint, const ggcl_event *, ggcl_event *);
typedef ggcl_int ggcl_marker_fn(ggcl_command_queue, ggcl_uint, const ggcl_event *, ggcl_event *);
typedef ggcl_int ggcl_queue_fn(ggcl_command_queue);  /* clFinish, clReleaseCommandQueue */
typedef ggcl_int ggcl_event_fn(ggcl_event);          /* clRetainEvent, clReleaseEvent */
typedef ggcl_int ggcl_wait_fn(ggcl_uint, const ggcl_event *);
typedef ggcl_int ggcl_event_info_fn(ggcl_event, ggcl_info, size_t, void *, size_t *);
typedef ggcl_int ggcl_kernel_info_fn(ggcl_kernel, ggcl_info, size_t, void *, size_t *);
typedef ggcl_int ggcl_queue_info_fn(ggcl_command_queue, ggcl_info, size_t, void *, size_t *);
typedef ggcl_int ggcl_device_info_fn(ggcl_device_id, ggcl_info, size_t, void *, size_t *);
typedef ggcl_int ggcl_device_ids_fn(ggcl_platform_id, ggcl_device_type, ggcl_uint, ggcl_device_id *, ggcl_uint *);
typedef ggcl_int ggcl_device_host_timer_fn(ggcl_device_id, ggcl_ulong *, ggcl_ulong *);

#endif
