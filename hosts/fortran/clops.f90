! clops.f90 — the Fortran binding of libclops: bind(c) mirrors of abi/clops.h, loading the plugin
! with dlopen/dlsym (POSIX's; on Windows dlfcn_windows.c's, over LoadLibraryA), and typed gemm/lu/solve/lu_solve on Fortran arrays, passed without copies.
! ABI 1.4's streams, events and interop are reached through their args structs' mirrors and
! clops_args_call (test_clops.f90's test_gemm_on_a_stream shows a submit and its wait);
! clops_host_register / clops_host_unregister wrap its registration of host memory, and
! clops_buffer_create_on / clops_buffer_release a device buffer on a chosen device of a pool.
!
! Arrays are described to clops where they lie: shape and strides (in elements) come from the
! addresses of their elements, so whole arrays (strides {1, size(a,1)}) and sections of a larger
! array such as a(1:m, 1:k) (strides {1, lda}) reach the device without a copy. clops needs one
! unit stride per matrix, as LAPACK does, and says so in its message otherwise.
!
! Errors: every call takes an optional `status` (intent(out), enum clops_status). When it is
! present a failure is returned there and clops_error_message() says what went wrong; when it is
! absent a failure stops the program with that message, as an I/O statement without iostat= does.
!
! Programs use module clops, at the end of this file. It gathers clops_core (the mirrors,
! loading, errors and the calls on tensors) and the typed operators of clops_real.inc, written
! once and compiled for each real kind by clops_real64 and clops_real32.
module clops_core
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit, real32, real64
    implicit none
    private

    ! ---- Constants of abi/clops.h -----------------------------------------------------------
    integer(c_int32_t), parameter, public :: CLOPS_ABI_MAJOR = 1, CLOPS_ABI_MINOR = 4
    ! The element sizes of ABI 1.0 and 1.1, which did not state them.
    integer(c_int32_t), parameter, public :: CLOPS_PARAM_SIZE_1_1 = 40, CLOPS_ARG_SIZE_1_1 = 48
    integer, parameter, public :: CLOPS_MAX_RANK = 4

    integer(c_int32_t), parameter, public :: &
        CLOPS_OK = 0, CLOPS_ERR_INVALID_ARGUMENT = 1, CLOPS_ERR_UNSUPPORTED = 2, &
        CLOPS_ERR_OUT_OF_DEVICE_MEMORY = 3, CLOPS_ERR_OUT_OF_HOST_MEMORY = 4, &
        CLOPS_ERR_DEVICE = 5, CLOPS_ERR_BUILD = 6, CLOPS_ERR_CONFIG = 7, CLOPS_ERR_IO = 8, &
        CLOPS_ERR_NOT_FOUND = 9, CLOPS_ERR_ABI_MISMATCH = 10, CLOPS_ERR_NO_DEVICE = 11, &
        CLOPS_ERR_INTERNAL = 12, CLOPS_ERR_CANCELLED = 13, CLOPS_ERR_TIMEOUT = 14 ! 13, 14: ABI 1.4
    ! enum clops_event_state (ABI 1.4)
    integer(c_int32_t), parameter, public :: &
        CLOPS_EVENT_QUEUED = 0, CLOPS_EVENT_RUNNING = 1, CLOPS_EVENT_COMPLETE = 2, &
        CLOPS_EVENT_FAILED = 3, CLOPS_EVENT_CANCELLED = 4

    integer(c_int32_t), parameter, public :: &
        CLOPS_DTYPE_INVALID = 0, CLOPS_F32 = 1, CLOPS_F64 = 2, CLOPS_I32 = 3, CLOPS_U32 = 4, &
        CLOPS_U8 = 5, CLOPS_I64 = 6

    integer(c_int32_t), parameter, public :: &
        CLOPS_PARAM_TENSOR_IN = 1, CLOPS_PARAM_TENSOR_OUT = 2, CLOPS_PARAM_TENSOR_INOUT = 3, &
        CLOPS_PARAM_INT64 = 4, CLOPS_PARAM_DOUBLE = 5, CLOPS_PARAM_ENUM = 6, CLOPS_PARAM_STRING = 7

    integer(c_int32_t), parameter, public :: CLOPS_NO_TRANS = 0, CLOPS_TRANS = 1
    integer(c_int32_t), parameter, public :: &
        CLOPS_LOG_ERROR = 0, CLOPS_LOG_WARNING = 1, CLOPS_LOG_INFO = 2, CLOPS_LOG_DEBUG = 3
    integer(c_int32_t), parameter, public :: &
        CLOPS_DEVICE_GPU = 1, CLOPS_DEVICE_CPU = 2, CLOPS_DEVICE_OTHER = 4

    ! ---- Mirrors of the ABI's structs (member for member; uint32/uint16 as the signed type of
    ! the same width: the values fit) ----------------------------------------------------------

    type, bind(c), public :: clops_tensor
        type(c_ptr) :: data = c_null_ptr
        type(c_ptr) :: buffer = c_null_ptr
        integer(c_int64_t) :: offset = 0
        integer(c_int32_t) :: dtype = CLOPS_DTYPE_INVALID
        integer(c_int32_t) :: rank = 0
        integer(c_int64_t) :: shape(CLOPS_MAX_RANK) = 0
        integer(c_int64_t) :: strides(CLOPS_MAX_RANK) = 0
    end type

    type, bind(c), public :: clops_param
        type(c_ptr) :: name
        integer(c_int32_t) :: kind
        integer(c_int32_t) :: dtypes ! uint32_t
        type(c_ptr) :: enum_values
        type(c_ptr) :: default_value
        type(c_ptr) :: doc
    end type

    type, bind(c), public :: clops_op
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: version
        type(c_ptr) :: name
        type(c_ptr) :: summary
        type(c_ptr) :: doc
        integer(c_int32_t) :: param_count
        integer(c_int32_t) :: reserved
        type(c_ptr) :: params ! param_count of them, param_size bytes apart: see clops_op_param
        type(c_funptr) :: entry
        ! ---- Appended in ABI 1.2 (present when struct_size >= OP_BYTES_WITH_PARAM_SIZE) ----
        integer(c_int32_t) :: param_size ! uint32_t: sizeof(struct clops_param) in the plugin
        integer(c_int32_t) :: reserved2
    end type

    type, bind(c), public :: clops_arg
        type(c_ptr) :: name = c_null_ptr
        integer(c_int32_t) :: kind = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: tensor = c_null_ptr
        integer(c_int64_t) :: i = 0
        real(c_double) :: d = 0
        type(c_ptr) :: s = c_null_ptr
    end type

    type, bind(c), public :: clops_device_info
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: type
        character(kind=c_char) :: name(128)
        character(kind=c_char) :: vendor(64)
        character(kind=c_char) :: platform(64)
        character(kind=c_char) :: driver_version(64)
        character(kind=c_char) :: opencl_version(64)
        integer(c_int64_t) :: global_mem_bytes
        integer(c_int64_t) :: local_mem_bytes
        integer(c_int32_t) :: compute_units
        integer(c_int32_t) :: queues
        integer(c_int32_t) :: fp64
        integer(c_int32_t) :: platform_index
        integer(c_int32_t) :: device_index
        integer(c_int32_t) :: reserved
    end type

    type, bind(c), public :: clops_stats
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: reserved
        integer(c_int64_t) :: programs_built
        integer(c_int64_t) :: programs_loaded
        integer(c_int64_t) :: cache_rejected
        integer(c_int64_t) :: calls
        integer(c_int64_t) :: bytes_uploaded
        integer(c_int64_t) :: bytes_downloaded
        integer(c_int64_t) :: build_ns ! ABI 1.3
    end type

    type, bind(c), public :: clops_op_stats
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: reserved
        type(c_ptr) :: name
        integer(c_int64_t) :: calls
        integer(c_int64_t) :: failures
        integer(c_int64_t) :: device_ns
    end type

    type, bind(c), public :: clops_device_stats
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: reserved
        integer(c_int64_t) :: tasks
        integer(c_int64_t) :: busy_ns
    end type

    ! The table, in the header's order. A plugin older than this mirror returns a shorter table:
    ! a member may be used only when struct_size covers it (clops_api_has).
    type, bind(c), public :: clops_api
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int16_t) :: abi_major   ! uint16_t
        integer(c_int16_t) :: abi_minor   ! uint16_t
        type(c_funptr) :: version
        type(c_funptr) :: last_error
        type(c_funptr) :: status_name
        type(c_funptr) :: set_log_callback
        type(c_funptr) :: devices_list
        type(c_funptr) :: pool_create_default
        type(c_funptr) :: pool_create_from_file
        type(c_funptr) :: pool_create_from_string
        type(c_funptr) :: pool_release
        type(c_funptr) :: pool_device_count
        type(c_funptr) :: pool_device_info
        type(c_funptr) :: pool_stats
        type(c_funptr) :: pool_op_stats
        type(c_funptr) :: buffer_create
        type(c_funptr) :: buffer_upload
        type(c_funptr) :: buffer_download
        type(c_funptr) :: buffer_release
        type(c_funptr) :: buffer_size
        type(c_funptr) :: op_count
        type(c_funptr) :: op_at
        type(c_funptr) :: op_find
        type(c_funptr) :: op_index
        type(c_funptr) :: invoke
        ! ---- Appended in ABI 1.1 ----
        type(c_funptr) :: pool_device_stats
        ! ---- Appended in ABI 1.2 ----
        type(c_funptr) :: invoke_sized
        type(c_funptr) :: check_sized
        ! ---- Appended in ABI 1.4: each takes one args struct below (call with clops_args_call) ----
        type(c_funptr) :: stream_create
        type(c_funptr) :: stream_release
        type(c_funptr) :: stream_wait
        type(c_funptr) :: submit
        type(c_funptr) :: event_query
        type(c_funptr) :: event_wait
        type(c_funptr) :: event_on_complete
        type(c_funptr) :: event_cancel
        type(c_funptr) :: event_release
        type(c_funptr) :: event_cl_event
        type(c_funptr) :: pool_create_from_cl
        type(c_funptr) :: buffer_wrap_cl
        type(c_funptr) :: buffer_cl
        type(c_funptr) :: memory_stats
        type(c_funptr) :: buffer_copy
        ! Appended after buffer_copy: present when clops_api_has_host_register()
        type(c_funptr) :: host_register
        type(c_funptr) :: host_unregister
        ! Appended after host_unregister: present when clops_api_has_buffer_create_on()
        type(c_funptr) :: buffer_create_on
        ! Appended in ABI 1.5: kernels built ahead of time (abi/clops.h's pool_prebuild)
        type(c_funptr) :: pool_prebuild
    end type

    ! What an output tensor of a call must be (check_sized, ABI 1.2).
    type, bind(c), public :: clops_output_spec
        integer(c_int32_t) :: struct_size ! uint32_t
        integer(c_int32_t) :: param
        integer(c_int32_t) :: dtype
        integer(c_int32_t) :: rank
        integer(c_int64_t) :: shape(CLOPS_MAX_RANK)
    end type

    ! ---- ABI 1.4: the args structs of the non-blocking calls and of interop. The host sets
    ! struct_size to c_sizeof of its copy; `out` members are written by the plugin. OpenCL
    ! handles (cl_context, cl_command_queue, cl_mem, cl_event) are type(c_ptr). ----------------

    type, bind(c), public :: clops_stream_create_args
        integer(c_int32_t) :: struct_size = 0 ! uint32_t
        integer(c_int32_t) :: device = 0
        type(c_ptr) :: pool = c_null_ptr
        type(c_ptr) :: cl_queue = c_null_ptr
        type(c_ptr) :: stream = c_null_ptr ! out
    end type

    type, bind(c), public :: clops_stream_release_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: stream = c_null_ptr
    end type

    type, bind(c), public :: clops_stream_wait_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: event_count = 0
        type(c_ptr) :: stream = c_null_ptr
        type(c_ptr) :: events = c_null_ptr ! event_count clops_event pointers
    end type

    type, bind(c), public :: clops_submit_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: op_index = 0
        type(c_ptr) :: stream = c_null_ptr
        type(c_ptr) :: args = c_null_ptr ! nargs clops_arg, arg_size bytes apart
        integer(c_int32_t) :: nargs = 0
        integer(c_int32_t) :: arg_size = 0 ! uint32_t
        type(c_ptr) :: wait_events = c_null_ptr
        integer(c_int32_t) :: wait_count = 0
        integer(c_int32_t) :: cl_wait_count = 0
        type(c_ptr) :: cl_wait_events = c_null_ptr
        type(c_funptr) :: on_complete = c_null_funptr ! clops_event_fn, runs on a clops thread
        type(c_ptr) :: user = c_null_ptr
        type(c_ptr) :: event = c_null_ptr ! out: the host's until event_release
    end type

    type, bind(c), public :: clops_event_query_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: state = 0 ! out: CLOPS_EVENT_*
        type(c_ptr) :: event = c_null_ptr
        integer(c_int32_t) :: status = 0 ! out
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: message = c_null_ptr ! out: valid until event_release
        real(c_double) :: progress = 0 ! out
    end type

    type, bind(c), public :: clops_event_wait_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: count = 0
        type(c_ptr) :: events = c_null_ptr
        integer(c_int64_t) :: timeout_ns = -1 ! < 0: no limit
        integer(c_int32_t) :: wait_all = 1
        integer(c_int32_t) :: ready = 0 ! out
    end type

    type, bind(c), public :: clops_event_callback_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: event = c_null_ptr
        type(c_funptr) :: fn = c_null_funptr
        type(c_ptr) :: user = c_null_ptr
    end type

    type, bind(c), public :: clops_event_cancel_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: event = c_null_ptr
    end type

    type, bind(c), public :: clops_event_release_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: event = c_null_ptr
    end type

    type, bind(c), public :: clops_event_cl_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: reserved = 0
        type(c_ptr) :: event = c_null_ptr
        type(c_ptr) :: cl_event = c_null_ptr ! out: retained for the host
    end type

    type, bind(c), public :: clops_pool_from_cl_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: device_count = 0
        type(c_ptr) :: cl_context = c_null_ptr
        type(c_ptr) :: cl_devices = c_null_ptr
        type(c_ptr) :: cl_queues = c_null_ptr
        type(c_ptr) :: config_text = c_null_ptr
        type(c_ptr) :: pool = c_null_ptr ! out
    end type

    type, bind(c), public :: clops_buffer_wrap_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: device = 0
        type(c_ptr) :: pool = c_null_ptr
        type(c_ptr) :: cl_mem = c_null_ptr
        type(c_ptr) :: buffer = c_null_ptr ! out
        integer(c_int64_t) :: bytes = 0 ! out
    end type

    type, bind(c), public :: clops_buffer_cl_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: device = 0 ! out
        type(c_ptr) :: buffer = c_null_ptr
        type(c_ptr) :: cl_mem = c_null_ptr ! out, not retained
        type(c_ptr) :: cl_context = c_null_ptr ! out, not retained
    end type

    type, bind(c), public :: clops_memory_stats_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: device = 0
        type(c_ptr) :: pool = c_null_ptr
        integer(c_int64_t) :: allocated_bytes = 0 ! out
        integer(c_int64_t) :: peak_bytes = 0 ! out
        integer(c_int64_t) :: buffers = 0 ! out
        integer(c_int64_t) :: limit_bytes = 0 ! out
    end type

    type, bind(c), public :: clops_buffer_copy_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: wait_count = 0
        type(c_ptr) :: stream = c_null_ptr
        type(c_ptr) :: src = c_null_ptr
        integer(c_int64_t) :: src_offset = 0
        type(c_ptr) :: dst = c_null_ptr
        integer(c_int64_t) :: dst_offset = 0
        integer(c_int64_t) :: bytes = 0
        type(c_ptr) :: wait_events = c_null_ptr
        type(c_ptr) :: event = c_null_ptr ! out
    end type

    ! Both host_register and host_unregister take it (unregister does not read `bytes`).
    type, bind(c), public :: clops_host_register_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: flags = 0 ! must be 0
        type(c_ptr) :: pool = c_null_ptr
        type(c_ptr) :: data = c_null_ptr
        integer(c_int64_t) :: bytes = 0
    end type

    ! buffer_create_on: a buffer on device `device` of the pool (buffer_create's is on device 0).
    ! A call whose device buffers all live on one device of its pool runs on that device.
    type, bind(c), public :: clops_buffer_create_args
        integer(c_int32_t) :: struct_size = 0
        integer(c_int32_t) :: device = 0 ! the pool's device index, 0-based
        type(c_ptr) :: pool = c_null_ptr
        integer(c_int64_t) :: bytes = 0
        type(c_ptr) :: buffer = c_null_ptr ! out: the host's until buffer_release
    end type

    ! Bytes of the table up to and including `invoke`, the last member this module calls:
    ! the three header fields (8 bytes), then 23 function pointers.
    integer(c_int32_t), parameter :: API_BYTES_NEEDED = 8 + 23 * 8
    ! The table of ABI 1.4, up to and including buffer_copy: 41 function pointers (23, then 1.1's
    ! one, 1.2's two and 1.4's fifteen).
    integer(c_int32_t), parameter :: API_BYTES_1_4 = 8 + 41 * 8
    ! ... and up to and including host_unregister, appended to 1.4 after buffer_copy.
    integer(c_int32_t), parameter :: API_BYTES_HOST_REGISTER = API_BYTES_1_4 + 2 * 8
    ! ... and up to and including buffer_create_on, appended after host_unregister.
    integer(c_int32_t), parameter :: API_BYTES_BUFFER_CREATE_ON = API_BYTES_HOST_REGISTER + 8
    ! Bytes of struct clops_op up to and including param_size (offset 56): a descriptor of a
    ! plugin older than ABI 1.2 is shorter, and its parameters are CLOPS_PARAM_SIZE_1_1 apart.
    integer(c_int32_t), parameter :: OP_BYTES_WITH_PARAM_SIZE = 56 + 4

    ! A pool of devices and queues; released with clops_pool_release (a released or never
    ! created pool has a null handle).
    type, public :: clops_pool
        type(c_ptr) :: handle = c_null_ptr
    end type

    public :: clops_load, clops_is_loaded, clops_get_api, clops_version
    public :: clops_pool_create, clops_pool_release
    public :: clops_error_message, clops_status_name
    public :: clops_op_find, clops_op_param, clops_param_name, clops_op_index
    public :: clops_api_has_streams, clops_args_call
    public :: clops_api_has_host_register, clops_host_register, clops_host_unregister
    public :: clops_api_has_buffer_create_on, clops_buffer_create_on, clops_buffer_release
    ! For clops_real.inc's modules only (module clops does not export them): the operators'
    ! calls on tensors, and the tensor over an array.
    public :: call_gemm, call_lu_or_solve, call_lu_solve, array_tensor

    ! ---- libdl and libc ---------------------------------------------------------------------
    ! The binding compiles alone, without a preprocessor, wherever the POSIX dlopen API exists:
    ! libdl on Linux (-ldl), dlfcn_windows.c on Windows (LoadLibraryA, GetProcAddress and
    ! FormatMessageA behind the same three names; it ignores the flags). RTLD_NOW is 2 on glibc,
    ! musl, the BSDs and macOS; RTLD_LOCAL, 0, is glibc's and musl's default anyway.
    integer(c_int), parameter :: RTLD_NOW = 2, RTLD_LOCAL = 0
    ! Windows is the LLP64 system (a C long of 32 bits beside 64-bit pointers): there the plugin
    ! is clops.dll, found by the DLL search order from the .exe's directory on; elsewhere
    ! libclops.so.1 through the dynamic loader (hosts/common/loader.h states the rule).
    logical, parameter :: ON_WINDOWS = c_long /= c_intptr_t
    character(len=*), parameter :: PLUGIN_FILE = merge('clops.dll    ', 'libclops.so.1', ON_WINDOWS)

    interface
        function c_dlopen(filename, flag) bind(c, name='dlopen') result(handle)
            import :: c_char, c_int, c_ptr
            character(kind=c_char), intent(in) :: filename(*)
            integer(c_int), value :: flag
            type(c_ptr) :: handle
        end function
        ! dlsym returns a void *; POSIX guarantees that it converts to a function pointer.
        function c_dlsym(handle, symbol) bind(c, name='dlsym') result(address)
            import :: c_char, c_ptr, c_funptr
            type(c_ptr), value :: handle
            character(kind=c_char), intent(in) :: symbol(*)
            type(c_funptr) :: address
        end function
        function c_dlerror() bind(c, name='dlerror') result(message)
            import :: c_ptr
            type(c_ptr) :: message
        end function
        function c_getenv(name) bind(c, name='getenv') result(value)
            import :: c_char, c_ptr
            character(kind=c_char), intent(in) :: name(*)
            type(c_ptr) :: value
        end function
        function c_strlen(s) bind(c, name='strlen') result(n)
            import :: c_ptr, c_size_t
            type(c_ptr), value :: s
            integer(c_size_t) :: n
        end function
    end interface

    ! ---- Prototypes of the table's members and of the typed operator entries ----------------
    abstract interface
        function plugin_entry_fn(abi_major) bind(c) result(api)
            import :: c_int32_t, c_ptr
            integer(c_int32_t), value :: abi_major ! uint32_t
            type(c_ptr) :: api
        end function
        function string_fn() bind(c) result(s)
            import :: c_ptr
            type(c_ptr) :: s
        end function
        function status_name_fn(status) bind(c) result(s)
            import :: c_int32_t, c_ptr
            integer(c_int32_t), value :: status
            type(c_ptr) :: s
        end function
        function pool_create_default_fn(pool) bind(c) result(status)
            import :: c_int32_t, c_ptr
            type(c_ptr), intent(out) :: pool
            integer(c_int32_t) :: status
        end function
        function pool_create_from_text_fn(text, pool) bind(c) result(status)
            import :: c_char, c_int32_t, c_ptr
            character(kind=c_char), intent(in) :: text(*)
            type(c_ptr), intent(out) :: pool
            integer(c_int32_t) :: status
        end function
        subroutine pool_release_fn(pool) bind(c)
            import :: c_ptr
            type(c_ptr), value :: pool
        end subroutine
        subroutine buffer_release_fn(buffer) bind(c)
            import :: c_ptr
            type(c_ptr), value :: buffer
        end subroutine
        ! Every member appended in ABI 1.4: one args struct, passed as c_loc(args).
        function args_fn(args) bind(c) result(status)
            import :: c_int32_t, c_ptr
            type(c_ptr), value :: args
            integer(c_int32_t) :: status
        end function
        function op_index_fn(op) bind(c) result(index)
            import :: c_int32_t, c_ptr
            type(c_ptr), value :: op
            integer(c_int32_t) :: index
        end function
        function op_find_fn(name) bind(c) result(op)
            import :: c_char, c_ptr
            character(kind=c_char), intent(in) :: name(*)
            type(c_ptr) :: op
        end function
        function gemm_fn(pool, a, b, c, trans_a, trans_b, alpha, beta) bind(c) result(status)
            import :: c_ptr, c_int32_t, c_double, clops_tensor
            type(c_ptr), value :: pool
            type(clops_tensor), intent(in) :: a, b, c
            integer(c_int32_t), value :: trans_a, trans_b
            real(c_double), value :: alpha, beta
            integer(c_int32_t) :: status
        end function
        function lu_fn(pool, a, ipiv, info, pivoting) bind(c) result(status)
            import :: c_ptr, c_int32_t, clops_tensor
            type(c_ptr), value :: pool
            type(clops_tensor), intent(in) :: a, ipiv, info
            integer(c_int32_t), value :: pivoting
            integer(c_int32_t) :: status
        end function
        function solve_fn(pool, a, b, ipiv, info) bind(c) result(status)
            import :: c_ptr, c_int32_t, clops_tensor
            type(c_ptr), value :: pool
            type(clops_tensor), intent(in) :: a, b, ipiv, info
            integer(c_int32_t) :: status
        end function
        function lu_solve_fn(pool, lu, ipiv, b, trans) bind(c) result(status)
            import :: c_ptr, c_int32_t, clops_tensor
            type(c_ptr), value :: pool
            type(clops_tensor), intent(in) :: lu, ipiv, b
            integer(c_int32_t), value :: trans
            integer(c_int32_t) :: status
        end function
    end interface

    ! ---- The loaded plugin (set once by clops_load, then only read) --------------------------
    type(c_ptr), save :: library = c_null_ptr
    type(clops_api), pointer, save :: table => null()
    type(c_funptr), save :: gemm_entry = c_null_funptr, lu_entry = c_null_funptr, &
                            solve_entry = c_null_funptr, lu_solve_entry = c_null_funptr
    ! A failure found by this module rather than by the plugin (not loaded, a library that does
    ! not load): what clops_error_message returns until the next call.
    character(len=:), allocatable, save :: module_message
    ! Where zero-size arrays point: a tensor's data must not be NULL, and is never read there.
    real(c_double), target, save :: empty_target(1) = 0

contains

    ! ---- Loading ----------------------------------------------------------------------------

    ! Loads libclops from `path`, else by the hosts' rule (hosts/common/loader.h): $CLOPS_LIBRARY
    ! alone when it is set, else libclops.so.1 through the dynamic loader (Windows: clops.dll
    ! through the DLL search order, which starts beside the .exe), and checks that it serves ABI 1 with every member this module uses. A second
    ! call does nothing. Returns CLOPS_OK, or CLOPS_ERR_NOT_FOUND / CLOPS_ERR_ABI_MISMATCH with
    ! the reason in clops_error_message().
    function clops_load(path) result(status)
        character(len=*), intent(in), optional :: path
        integer(c_int32_t) :: status
        character(len=:), allocatable :: candidate
        type(c_ptr) :: handle, api
        type(c_funptr) :: entry_address
        procedure(plugin_entry_fn), pointer :: entry

        call clear_module_message()
        status = CLOPS_OK
        if (associated(table)) return
        candidate = library_candidate(path)
        handle = c_dlopen(to_c(candidate), ior(RTLD_NOW, RTLD_LOCAL))
        if (.not. c_associated(handle)) then
            status = fail(CLOPS_ERR_NOT_FOUND, 'cannot load libclops: '//from_c(c_dlerror())// &
                          library_origin(path))
            return
        end if
        entry_address = c_dlsym(handle, to_c('clops_plugin_entry'))
        if (.not. c_associated(entry_address)) then
            status = fail(CLOPS_ERR_NOT_FOUND, candidate//': no symbol clops_plugin_entry')
            return
        end if
        call c_f_procpointer(entry_address, entry)
        api = entry(CLOPS_ABI_MAJOR)
        if (.not. c_associated(api)) then
            status = fail(CLOPS_ERR_ABI_MISMATCH, candidate//': ABI 1 is not served')
            return
        end if
        call c_f_pointer(api, table)
        if (table%abi_major /= CLOPS_ABI_MAJOR .or. table%struct_size < API_BYTES_NEEDED) then
            nullify (table)
            status = fail(CLOPS_ERR_ABI_MISMATCH, candidate// &
                          ': the table is older than this binding (ABI 1.0 at least)')
            return
        end if
        library = handle
        gemm_entry = op_entry('gemm')
        lu_entry = op_entry('lu')
        solve_entry = op_entry('solve')
        lu_solve_entry = op_entry('lu_solve')
    end function

    logical function clops_is_loaded()
        clops_is_loaded = associated(table)
    end function

    ! The plugin's table, for calls this module does not wrap (null before clops_load).
    function clops_get_api() result(api)
        type(clops_api), pointer :: api
        api => table
    end function

    function clops_version() result(version)
        character(len=:), allocatable :: version
        version = ''
        if (associated(table)) version = string_member(table%version)
    end function

    ! What a member of the table with string_fn's prototype (version, last_error) returns.
    function string_member(member) result(s)
        type(c_funptr), intent(in) :: member
        character(len=:), allocatable :: s
        procedure(string_fn), pointer :: fn
        call c_f_procpointer(member, fn)
        s = from_c(fn())
    end function

    ! getenv() rather than get_environment_variable: libgfortran strndup()s the unterminated
    ! name, which AddressSanitizer's strict_string_checks (the CI's sanitizer run) reports.
    function library_candidate(path) result(candidate)
        character(len=*), intent(in), optional :: path
        character(len=:), allocatable :: candidate
        if (present(path)) then
            candidate = path
            return
        end if
        candidate = from_c(c_getenv(to_c('CLOPS_LIBRARY')))
        if (len(candidate) == 0) candidate = trim(PLUGIN_FILE)
    end function

    ! Where the candidate came from, for the message of a library that did not load.
    function library_origin(path) result(origin)
        character(len=*), intent(in), optional :: path
        character(len=:), allocatable :: origin
        origin = ''
        if (present(path)) return
        if (len(from_c(c_getenv(to_c('CLOPS_LIBRARY')))) > 0) origin = ' (from $CLOPS_LIBRARY)'
    end function

    function op_entry(name) result(entry)
        character(len=*), intent(in) :: name
        type(c_funptr) :: entry
        type(clops_op), pointer :: op
        entry = c_null_funptr
        op => clops_op_find(name)
        if (associated(op)) entry = op%entry
    end function

    ! ---- Descriptors ------------------------------------------------------------------------

    ! The descriptor of operator `name`; null when there is none or the library is not loaded.
    function clops_op_find(name) result(op)
        character(len=*), intent(in) :: name
        type(clops_op), pointer :: op
        procedure(op_find_fn), pointer :: find
        type(c_ptr) :: found
        nullify (op)
        if (.not. associated(table)) return
        call c_f_procpointer(table%op_find, find)
        found = find(to_c(name))
        if (c_associated(found)) call c_f_pointer(found, op)
    end function

    ! Parameter `index` (1-based) of a descriptor, null when out of range. The parameters lie
    ! param_size bytes apart as the plugin was built, which need not be this mirror's size:
    ! c_f_pointer(op%params, params, [n]) would step by ours.
    function clops_op_param(op, index) result(param)
        type(clops_op), intent(in) :: op
        integer, intent(in) :: index
        type(clops_param), pointer :: param
        integer(c_intptr_t) :: first, size
        nullify (param)
        if (index < 1 .or. index > op%param_count) return
        size = CLOPS_PARAM_SIZE_1_1
        if (op%struct_size >= OP_BYTES_WITH_PARAM_SIZE) size = op%param_size
        first = transfer(op%params, first)
        call c_f_pointer(transfer(first + (index - 1) * size, c_null_ptr), param)
    end function

    function clops_param_name(param) result(name)
        type(clops_param), intent(in) :: param
        character(len=:), allocatable :: name
        name = from_c(param%name)
    end function

    ! The op_at() numbering of operator `name` (submit's op_index); -1 when there is none.
    function clops_op_index(name) result(index)
        character(len=*), intent(in) :: name
        integer(c_int32_t) :: index
        type(clops_op), pointer :: op
        procedure(op_index_fn), pointer :: fn
        index = -1
        op => clops_op_find(name)
        if (.not. associated(op)) return
        call c_f_procpointer(table%op_index, fn)
        index = fn(c_loc(op))
    end function

    ! Whether the loaded table has ABI 1.4's members (streams, events, interop).
    logical function clops_api_has_streams()
        clops_api_has_streams = .false.
        if (associated(table)) clops_api_has_streams = table%struct_size >= API_BYTES_1_4
    end function

    ! Whether the loaded table has host_register and host_unregister (appended to ABI 1.4 after
    ! buffer_copy, so a 1.4 table may lack them).
    logical function clops_api_has_host_register()
        clops_api_has_host_register = .false.
        if (associated(table)) then
            clops_api_has_host_register = table%struct_size >= API_BYTES_HOST_REGISTER
        end if
    end function

    ! Whether the loaded table has buffer_create_on (appended to ABI 1.4 after host_unregister).
    logical function clops_api_has_buffer_create_on()
        clops_api_has_buffer_create_on = .false.
        if (associated(table)) then
            clops_api_has_buffer_create_on = table%struct_size >= API_BYTES_BUFFER_CREATE_ON
        end if
    end function

    ! Calls an ABI 1.4 member of the table (table%submit, table%event_wait, ...) with the address
    ! of its args struct (c_loc of a target variable of the matching clops_*_args type). Check
    ! clops_api_has_streams() first.
    function clops_args_call(member, args) result(status)
        type(c_funptr), intent(in) :: member
        type(c_ptr), intent(in) :: args
        integer(c_int32_t) :: status
        procedure(args_fn), pointer :: fn
        call c_f_procpointer(member, fn)
        status = fn(args)
    end function

    ! ---- Pools ------------------------------------------------------------------------------

    ! Creates a pool: the built-in defaults (first GPU, else the CPU), or a pool configuration
    ! file (configs/clops.cfg documents the format). Loads the library first if needed.
    function clops_pool_create(pool, config_file) result(status)
        type(clops_pool), intent(out) :: pool
        character(len=*), intent(in), optional :: config_file
        integer(c_int32_t) :: status
        procedure(pool_create_default_fn), pointer :: create_default
        procedure(pool_create_from_text_fn), pointer :: create_from_file

        status = clops_load()
        if (status /= CLOPS_OK) return
        if (present(config_file)) then
            call c_f_procpointer(table%pool_create_from_file, create_from_file)
            status = create_from_file(to_c(config_file), pool%handle)
        else
            call c_f_procpointer(table%pool_create_default, create_default)
            status = create_default(pool%handle)
        end if
        if (status /= CLOPS_OK) pool%handle = c_null_ptr
    end function

    ! Releases the pool's devices and kernels; a null pool is a no-op, so a second call is too.
    subroutine clops_pool_release(pool)
        type(clops_pool), intent(inout) :: pool
        procedure(pool_release_fn), pointer :: release
        if (.not. c_associated(pool%handle) .or. .not. associated(table)) return
        call c_f_procpointer(table%pool_release, release)
        call release(pool%handle)
        pool%handle = c_null_ptr
    end subroutine

    ! ---- Registered host memory -------------------------------------------------------------

    ! Page-locks [data, data + bytes) for the pool's devices, so that an operand lying wholly
    ! inside it (an array or a section of one) is uploaded by one DMA straight from it instead
    ! of being copied into clops' pinned staging blocks first. Registering costs about as much
    ! as copying the range two or three times: it pays for arrays that many calls read.
    ! `data` = c_loc(a) of a contiguous target array, `bytes` = size(a, kind=c_int64_t) *
    ! c_sizeof(a(1)) (c_sizeof(a) where a is not allocatable). The array must stay allocated
    ! until clops_host_unregister(pool, data) or clops_pool_release; ranges of one pool may not
    ! overlap. Outputs are still written through staging blocks.
    subroutine clops_host_register(pool, data, bytes, status)
        type(clops_pool), intent(in) :: pool
        type(c_ptr), intent(in) :: data
        integer(c_int64_t), intent(in) :: bytes
        integer(c_int32_t), intent(out), optional :: status
        call deliver(call_host_range(pool, .false., data, bytes), status)
    end subroutine

    ! Ends the registration that starts at `data` (the same c_loc given to clops_host_register).
    ! A call still reading the range keeps it page-locked until it completes.
    subroutine clops_host_unregister(pool, data, status)
        type(clops_pool), intent(in) :: pool
        type(c_ptr), intent(in) :: data
        integer(c_int32_t), intent(out), optional :: status
        call deliver(call_host_range(pool, .true., data, 0_c_int64_t), status)
    end subroutine

    ! host_register, or host_unregister when `unregister`, through their args struct.
    integer(c_int32_t) function call_host_range(pool, unregister, data, bytes) result(status)
        type(clops_pool), intent(in) :: pool
        logical, intent(in) :: unregister
        type(c_ptr), intent(in) :: data
        integer(c_int64_t), intent(in) :: bytes
        type(clops_host_register_args), target :: args
        type(c_funptr) :: member
        character(len=:), allocatable :: name
        name = 'host_register'
        if (unregister) name = 'host_unregister'
        member = c_null_funptr
        if (clops_api_has_host_register()) then
            member = table%host_register
            if (unregister) member = table%host_unregister
        end if
        status = ready_appended(pool, member, name, 'buffer_copy')
        if (status /= CLOPS_OK) return
        args = clops_host_register_args(int(c_sizeof(args), c_int32_t), 0, pool%handle, data, &
                                        bytes)
        status = clops_args_call(member, c_loc(args))
    end function

    ! ---- Buffers on a chosen device ---------------------------------------------------------

    ! A device buffer of `bytes` on device `device` (0-based; 0 is the primary, where
    ! buffer_create allocates) of the pool, for the `buffer` member of a clops_tensor; c_null_ptr
    ! when refused (a device the pool does not have is CLOPS_ERR_NOT_FOUND). A call whose device
    ! buffers all live on one device of its pool runs on that device, whatever device its
    ! operator is configured on. The buffer is the caller's until clops_buffer_release.
    function clops_buffer_create_on(pool, device, bytes, status) result(buffer)
        type(clops_pool), intent(in) :: pool
        integer(c_int32_t), intent(in) :: device
        integer(c_int64_t), intent(in) :: bytes
        integer(c_int32_t), intent(out), optional :: status
        type(c_ptr) :: buffer
        type(clops_buffer_create_args), target :: args
        type(c_funptr) :: member
        integer(c_int32_t) :: result_status
        buffer = c_null_ptr
        member = c_null_funptr
        if (clops_api_has_buffer_create_on()) member = table%buffer_create_on
        result_status = ready_appended(pool, member, 'buffer_create_on', 'host_unregister')
        if (result_status == CLOPS_OK) then
            args = clops_buffer_create_args(int(c_sizeof(args), c_int32_t), device, &
                                            pool%handle, bytes)
            result_status = clops_args_call(member, c_loc(args))
            buffer = args%buffer
        end if
        call deliver(result_status, status)
    end function

    ! Releases a buffer of clops_buffer_create_on (or of the table's buffer_create) and nulls
    ! the handle, so a second call does nothing. A call still using it frees it when it ends.
    subroutine clops_buffer_release(buffer)
        type(c_ptr), intent(inout) :: buffer
        procedure(buffer_release_fn), pointer :: release
        if (.not. c_associated(buffer) .or. .not. associated(table)) return
        call c_f_procpointer(table%buffer_release, release)
        call release(buffer)
        buffer = c_null_ptr
    end subroutine

    ! ---- Errors -----------------------------------------------------------------------------

    ! What the last failed call of this thread went wrong with: the plugin's message, which names
    ! the parameter, its value and what was expected.
    function clops_error_message() result(message)
        character(len=:), allocatable :: message
        if (allocated(module_message)) then
            if (len(module_message) > 0) then
                message = module_message
                return
            end if
        end if
        message = 'libclops is not loaded'
        if (associated(table)) message = string_member(table%last_error)
    end function

    ! The status's enum name, e.g. "CLOPS_ERR_INVALID_ARGUMENT".
    function clops_status_name(status) result(name)
        integer(c_int32_t), intent(in) :: status
        character(len=:), allocatable :: name
        procedure(status_name_fn), pointer :: fn
        if (.not. associated(table)) then
            name = 'CLOPS_ERR_NOT_FOUND'
            return
        end if
        call c_f_procpointer(table%status_name, fn)
        name = from_c(fn(status))
    end function

    integer(c_int32_t) function fail(status, message)
        integer(c_int32_t), intent(in) :: status
        character(len=*), intent(in) :: message
        module_message = message
        fail = status
    end function

    subroutine clear_module_message()
        module_message = ''
    end subroutine

    ! Returns the status to the caller, or stops with the message when the caller gave no
    ! `status` to receive it.
    subroutine deliver(result_status, status)
        integer(c_int32_t), intent(in) :: result_status
        integer(c_int32_t), intent(out), optional :: status
        if (present(status)) then
            status = result_status
        else if (result_status /= CLOPS_OK) then
            ! Fortran 2008's error stop takes only a constant: the message goes to stderr first.
            ! List-directed: libgfortran strndup()s format literals, which AddressSanitizer's
            ! strict_string_checks reports.
            write (error_unit, *) 'clops: '//clops_status_name(result_status)//': '// &
                clops_error_message()
            error stop 'clops: a call failed and no status argument was given to receive it'
        end if
    end subroutine

    ! CLOPS_OK when the library is loaded and the pool and operator are usable.
    integer(c_int32_t) function ready(pool, entry, name)
        type(clops_pool), intent(in) :: pool
        type(c_funptr), intent(in) :: entry
        character(len=*), intent(in) :: name
        call clear_module_message()
        ready = CLOPS_OK
        if (.not. associated(table)) then
            ready = fail(CLOPS_ERR_INVALID_ARGUMENT, name//': libclops is not loaded (call clops_load)')
        else if (.not. c_associated(pool%handle)) then
            ready = fail(CLOPS_ERR_INVALID_ARGUMENT, name//': the pool is not created (or released)')
        else if (.not. c_associated(entry)) then
            ready = fail(CLOPS_ERR_NOT_FOUND, name//': the loaded libclops has no such operator')
        end if
    end function

    ! ready() for a member appended to ABI 1.4 after `after`: `member` is null when the loaded
    ! table stops before it, which is CLOPS_ERR_UNSUPPORTED rather than a missing operator.
    integer(c_int32_t) function ready_appended(pool, member, name, after) result(status)
        type(clops_pool), intent(in) :: pool
        type(c_funptr), intent(in) :: member
        character(len=*), intent(in) :: name, after
        if (clops_is_loaded() .and. .not. c_associated(member)) then
            status = fail(CLOPS_ERR_UNSUPPORTED, name//': the loaded libclops predates it '// &
                          '(ABI 1.4 appended it after '//after//')')
            return
        end if
        status = ready(pool, member, name)
    end function

    ! ---- Tensors of Fortran arrays ----------------------------------------------------------

    ! A tensor over an array of `extents`, whose first element lies at `first` and whose next
    ! element along each axis lies at `next(axis)` (c_null_ptr where the extent is below 2).
    ! Strides are the address differences in elements: 1 and size(a,1) for a whole array.
    function array_tensor(dtype, element_bytes, extents, first, next) result(t)
        integer(c_int32_t), intent(in) :: dtype
        integer, intent(in) :: element_bytes
        integer, intent(in) :: extents(:)
        type(c_ptr), intent(in) :: first, next(:)
        type(clops_tensor) :: t
        integer :: axis
        integer(c_intptr_t) :: base
        integer(c_int64_t) :: dense
        t%dtype = dtype
        t%rank = size(extents)
        t%shape(1:size(extents)) = extents
        if (any(extents == 0)) then
            t%data = c_loc(empty_target)
            t%strides(1:size(extents)) = 1
            return
        end if
        t%data = first
        base = transfer(first, base)
        dense = 1
        do axis = 1, size(extents)
            if (extents(axis) > 1) then
                t%strides(axis) = (transfer(next(axis), base) - base) / element_bytes
            else
                t%strides(axis) = dense ! any value serves an axis of extent 1
            end if
            dense = dense * extents(axis)
        end do
    end function

    function tensor_i32(v) result(t)
        integer(c_int32_t), intent(in), target :: v(:)
        type(clops_tensor) :: t
        type(c_ptr) :: first, next(1)
        first = c_null_ptr
        next = c_null_ptr
        if (size(v) > 0) first = c_loc(v(1))
        if (size(v) > 1) next(1) = c_loc(v(2))
        t = array_tensor(CLOPS_I32, 4, [size(v)], first, next)
    end function

    integer(c_int32_t) function trans_code(trans)
        logical, intent(in), optional :: trans
        trans_code = CLOPS_NO_TRANS
        if (present(trans)) then
            if (trans) trans_code = CLOPS_TRANS
        end if
    end function

    ! ---- The operators' calls on tensors (clops_real.inc makes the tensors) ------------------

    ! gemm: C = alpha op(A) op(B) + beta C.
    subroutine call_gemm(pool, a, b, c, alpha, beta, trans_a, trans_b, status)
        type(clops_pool), intent(in) :: pool
        type(clops_tensor), intent(in) :: a, b, c
        real(c_double), intent(in) :: alpha, beta
        logical, intent(in), optional :: trans_a, trans_b
        integer(c_int32_t), intent(out), optional :: status
        procedure(gemm_fn), pointer :: fn
        integer(c_int32_t) :: result_status
        result_status = ready(pool, gemm_entry, 'gemm')
        if (result_status == CLOPS_OK) then
            call c_f_procpointer(gemm_entry, fn)
            result_status = fn(pool%handle, a, b, c, trans_code(trans_a), trans_code(trans_b), &
                               alpha, beta)
        end if
        call deliver(result_status, status)
    end subroutine

    ! lu (b absent), P A = L U (getrf), or solve (b present), A X = B (gesv); both give LAPACK's
    ! info.
    subroutine call_lu_or_solve(pool, a, b, ipiv, info, status)
        type(clops_pool), intent(in) :: pool
        type(clops_tensor), intent(in) :: a
        type(clops_tensor), intent(in), optional :: b
        integer(c_int32_t), intent(inout), target :: ipiv(:)
        integer(c_int32_t), intent(out) :: info
        integer(c_int32_t), intent(out), optional :: status
        procedure(lu_fn), pointer :: lu_call
        procedure(solve_fn), pointer :: solve_call
        integer(c_int32_t), target :: info_value(1)
        integer(c_int32_t) :: result_status
        info_value = 0
        if (present(b)) then
            result_status = ready(pool, solve_entry, 'solve')
            if (result_status == CLOPS_OK) then
                call c_f_procpointer(solve_entry, solve_call)
                result_status = solve_call(pool%handle, a, b, tensor_i32(ipiv), &
                                           tensor_i32(info_value))
            end if
        else
            result_status = ready(pool, lu_entry, 'lu')
            if (result_status == CLOPS_OK) then
                call c_f_procpointer(lu_entry, lu_call)
                result_status = lu_call(pool%handle, a, tensor_i32(ipiv), tensor_i32(info_value), 0)
            end if
        end if
        info = info_value(1)
        call deliver(result_status, status)
    end subroutine

    ! lu_solve: A X = B or Aᵀ X = B with lu's factors (getrs).
    subroutine call_lu_solve(pool, factors, ipiv, b, trans, status)
        type(clops_pool), intent(in) :: pool
        type(clops_tensor), intent(in) :: factors, b
        integer(c_int32_t), intent(in), target :: ipiv(:)
        logical, intent(in), optional :: trans
        integer(c_int32_t), intent(out), optional :: status
        procedure(lu_solve_fn), pointer :: fn
        integer(c_int32_t) :: result_status
        result_status = ready(pool, lu_solve_entry, 'lu_solve')
        if (result_status == CLOPS_OK) then
            call c_f_procpointer(lu_solve_entry, fn)
            result_status = fn(pool%handle, factors, tensor_i32(ipiv), b, trans_code(trans))
        end if
        call deliver(result_status, status)
    end subroutine

    ! ---- C strings --------------------------------------------------------------------------

    function to_c(s) result(c_string)
        character(len=*), intent(in) :: s
        character(kind=c_char, len=:), allocatable :: c_string
        c_string = s//c_null_char
    end function

    ! A copy of the NUL-terminated string at `p` ('' for NULL).
    function from_c(p) result(s)
        type(c_ptr), intent(in) :: p
        character(len=:), allocatable :: s
        character(kind=c_char), pointer :: chars(:)
        integer :: n, i
        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = int(c_strlen(p))
        call c_f_pointer(p, chars, [n])
        allocate (character(len=n) :: s)
        do i = 1, n
            s(i:i) = chars(i)
        end do
    end function

end module clops_core

module clops_real64
    use, intrinsic :: iso_fortran_env, only: wp => real64
    use clops_core, only: wp_dtype => CLOPS_F64
    include 'clops_real.inc'
end module clops_real64

module clops_real32
    use, intrinsic :: iso_fortran_env, only: wp => real32
    use clops_core, only: wp_dtype => CLOPS_F32
    include 'clops_real.inc'
end module clops_real32

! The module programs use: clops_core's API, and gemm, lu, solve and lu_solve generic over
! real64 and real32 (b a matrix or a vector).
module clops
    use clops_core
    use clops_real64, only: gemm_f64 => gemm_real, lu_f64 => lu_real, solve_f64 => solve_real, &
                            solve_f64_vector => solve_real_vector, &
                            lu_solve_f64 => lu_solve_real, lu_solve_f64_vector => lu_solve_real_vector
    use clops_real32, only: gemm_f32 => gemm_real, lu_f32 => lu_real, solve_f32 => solve_real, &
                            solve_f32_vector => solve_real_vector, &
                            lu_solve_f32 => lu_solve_real, lu_solve_f32_vector => lu_solve_real_vector
    implicit none
    private :: call_gemm, call_lu_or_solve, call_lu_solve, array_tensor
    private :: gemm_f64, lu_f64, solve_f64, solve_f64_vector, lu_solve_f64, lu_solve_f64_vector
    private :: gemm_f32, lu_f32, solve_f32, solve_f32_vector, lu_solve_f32, lu_solve_f32_vector
    public :: gemm, lu, solve, lu_solve

    interface gemm
        module procedure gemm_f64, gemm_f32
    end interface
    interface lu
        module procedure lu_f64, lu_f32
    end interface
    interface solve
        module procedure solve_f64, solve_f64_vector, solve_f32, solve_f32_vector
    end interface
    interface lu_solve
        module procedure lu_solve_f64, lu_solve_f64_vector, lu_solve_f32, lu_solve_f32_vector
    end interface
end module clops
