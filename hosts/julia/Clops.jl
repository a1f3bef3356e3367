# Clops.jl — the Julia binding of libclops through its C ABI alone (abi/clops.h): Libdl.dlopen,
# clops_plugin_entry, the table's function pointers read by byte offset, and `ccall` on them.
#
# Column-major matrices (Matrix, and strided views such as view(P, 1:m, 1:n)) reach clops where
# they lie, as tensors with strides (1, stride(A, 2)) in elements: no copies. The C test
# test_julia_calls.c makes exactly the calls this module makes, with the same layouts and offsets
# (Julia is not installable on our machines, so that test is what keeps this file honest).
module Clops

using Libdl
import LinearAlgebra: SingularException

export Pool, ClopsError, gemm!, solve!, release!
# lu! is not exported: LinearAlgebra exports one. Call Clops.lu!.

const ABI_MAJOR = 0x00000001
const F32, F64, I32 = Int32(1), Int32(2), Int32(3)
const ERR_INVALID_ARGUMENT, ERR_NOT_FOUND, ERR_ABI_MISMATCH = Int32(1), Int32(9), Int32(10)
const ERR_CANCELLED, ERR_TIMEOUT = Int32(13), Int32(14) # ABI 1.4
# enum clops_event_state (ABI 1.4)
const EVENT_QUEUED, EVENT_RUNNING, EVENT_COMPLETE, EVENT_FAILED, EVENT_CANCELLED =
    Int32(0), Int32(1), Int32(2), Int32(3), Int32(4)

# The i-th function pointer of struct clops_api lies at byte 8 + 8i: after uint32 struct_size,
# uint16 abi_major and uint16 abi_minor come the pointers, in header order.
const API_VERSION = 0
const API_LAST_ERROR = 1
const API_STATUS_NAME = 2
const API_POOL_CREATE_DEFAULT = 5
const API_POOL_CREATE_FROM_FILE = 6
const API_POOL_RELEASE = 8
const API_OP_FIND = 20
const API_BYTES_NEEDED = 8 + 8 * (API_OP_FIND + 1) # the table must reach op_find, our last
const API_INVOKE_SIZED = 24
# Appended in ABI 1.4: each takes one args struct (below) as Ref, and returns the status. Usable
# when the table's struct_size reaches API_BYTES_1_4.
const API_STREAM_CREATE = 26
const API_STREAM_RELEASE = 27
const API_STREAM_WAIT = 28
const API_SUBMIT = 29
const API_EVENT_QUERY = 30
const API_EVENT_WAIT = 31
const API_EVENT_ON_COMPLETE = 32
const API_EVENT_CANCEL = 33
const API_EVENT_RELEASE = 34
const API_EVENT_CL_EVENT = 35
const API_POOL_CREATE_FROM_CL = 36
const API_BUFFER_WRAP_CL = 37
const API_BUFFER_CL = 38
const API_MEMORY_STATS = 39
const API_BUFFER_COPY = 40
const API_BYTES_1_4 = 8 + 8 * (API_BUFFER_COPY + 1)
# Appended to ABI 1.4 after buffer_copy, so a 1.4 table may lack them: usable when struct_size
# reaches API_BYTES_HOST_REGISTER. Both take a Ref{HostRegisterArgs}.
const API_HOST_REGISTER = 41
const API_HOST_UNREGISTER = 42
const API_BYTES_HOST_REGISTER = 8 + 8 * (API_HOST_UNREGISTER + 1)
# Appended after host_unregister: usable when struct_size reaches API_BYTES_BUFFER_CREATE_ON.
# Takes a Ref{BufferCreateArgs}.
const API_BUFFER_CREATE_ON = 43
const API_BYTES_BUFFER_CREATE_ON = 8 + 8 * (API_BUFFER_CREATE_ON + 1)
# struct clops_op: uint32 struct_size, int32 version, name, summary, doc, int32 param_count,
# int32 reserved, params, then the typed entry; ABI 1.2 appends uint32 param_size at byte 56,
# the distance between elements of params. This module reads no parameter descriptor and calls
# no invoke; code that does steps by param_size (when struct_size reaches past byte 60) and
# calls invoke_sized (table index 24 from ABI 1.2) with its own sizeof(struct clops_arg).
const OP_ENTRY_OFFSET = 48

# struct clops_tensor, member for member: 96 bytes, offsets 0, 8, 16, 24, 28, 32, 64.
struct ClopsTensor
    data::Ptr{Cvoid}
    buffer::Ptr{Cvoid}
    offset::Int64
    dtype::Int32
    rank::Int32
    shape::NTuple{4,Int64}
    strides::NTuple{4,Int64}
end


# ---- ABI 1.4: the args structs of the non-blocking calls and of interop ----------------------
# Member for member as abi/clops.h (test_julia_calls.c reads these definitions and checks every
# size and offset against the header). The host sets struct_size to sizeof of the struct and
# passes a Ref: `a = Ref(SubmitArgs(...)); ccall(api_function(API_SUBMIT), Int32,
# (Ref{SubmitArgs},), a)`; `out` members are read from a[] afterwards. OpenCL handles are
# Ptr{Cvoid}. A completion callback (on_complete, EventCallbackArgs.fn) runs on a clops thread:
# make it with @cfunction and keep it to what Julia allows off its own threads.

struct StreamCreateArgs
    struct_size::UInt32
    device::Int32
    pool::Ptr{Cvoid}
    cl_queue::Ptr{Cvoid}
    stream::Ptr{Cvoid}
end

struct StreamReleaseArgs
    struct_size::UInt32
    reserved::Int32
    stream::Ptr{Cvoid}
end

struct StreamWaitArgs
    struct_size::UInt32
    event_count::Int32
    stream::Ptr{Cvoid}
    events::Ptr{Ptr{Cvoid}}
end

struct SubmitArgs
    struct_size::UInt32
    op_index::Int32
    stream::Ptr{Cvoid}
    args::Ptr{Cvoid}
    nargs::Int32
    arg_size::UInt32
    wait_events::Ptr{Ptr{Cvoid}}
    wait_count::Int32
    cl_wait_count::Int32
    cl_wait_events::Ptr{Ptr{Cvoid}}
    on_complete::Ptr{Cvoid}
    user::Ptr{Cvoid}
    event::Ptr{Cvoid}
end

struct EventQueryArgs
    struct_size::UInt32
    state::Int32
    event::Ptr{Cvoid}
    status::Int32
    reserved::Int32
    message::Ptr{UInt8}
    progress::Float64
end

struct EventWaitArgs
    struct_size::UInt32
    count::Int32
    events::Ptr{Ptr{Cvoid}}
    timeout_ns::Int64
    wait_all::Int32
    ready::Int32
end

struct EventCallbackArgs
    struct_size::UInt32
    reserved::Int32
    event::Ptr{Cvoid}
    fn::Ptr{Cvoid}
    user::Ptr{Cvoid}
end

struct EventCancelArgs
    struct_size::UInt32
    reserved::Int32
    event::Ptr{Cvoid}
end

struct EventReleaseArgs
    struct_size::UInt32
    reserved::Int32
    event::Ptr{Cvoid}
end

struct EventClArgs
    struct_size::UInt32
    reserved::Int32
    event::Ptr{Cvoid}
    cl_event::Ptr{Cvoid}
end

struct PoolFromClArgs
    struct_size::UInt32
    device_count::Int32
    cl_context::Ptr{Cvoid}
    cl_devices::Ptr{Ptr{Cvoid}}
    cl_queues::Ptr{Ptr{Cvoid}}
    config_text::Ptr{UInt8}
    pool::Ptr{Cvoid}
end

struct BufferWrapArgs
    struct_size::UInt32
    device::Int32
    pool::Ptr{Cvoid}
    cl_mem::Ptr{Cvoid}
    buffer::Ptr{Cvoid}
    bytes::Int64
end

struct BufferClArgs
    struct_size::UInt32
    device::Int32
    buffer::Ptr{Cvoid}
    cl_mem::Ptr{Cvoid}
    cl_context::Ptr{Cvoid}
end

struct MemoryStatsArgs
    struct_size::UInt32
    device::Int32
    pool::Ptr{Cvoid}
    allocated_bytes::Int64
    peak_bytes::Int64
    buffers::Int64
    limit_bytes::Int64
end

struct BufferCopyArgs
    struct_size::UInt32
    wait_count::Int32
    stream::Ptr{Cvoid}
    src::Ptr{Cvoid}
    src_offset::Int64
    dst::Ptr{Cvoid}
    dst_offset::Int64
    bytes::Int64
    wait_events::Ptr{Ptr{Cvoid}}
    event::Ptr{Cvoid}
end

# host_register / host_unregister: [data, data + bytes) page-locked for the pool's devices, so
# that an operand lying wholly inside it is uploaded by one DMA straight from it. flags must be
# 0; unregister takes the same data and does not read bytes. The array must stay alive (a
# reference held, not only GC.@preserve) until host_unregister or the pool's release.
struct HostRegisterArgs
    struct_size::UInt32
    flags::Int32
    pool::Ptr{Cvoid}
    data::Ptr{Cvoid}
    bytes::Int64
end

# buffer_create_on: a buffer of `bytes` on device `device` (0-based; buffer_create's is on 0) of
# the pool, written to `buffer` (the host's until buffer_release). A call whose device buffers
# all live on one device of its pool runs on that device; a device the pool does not have is
# ERR_NOT_FOUND.
struct BufferCreateArgs
    struct_size::UInt32
    device::Int32
    pool::Ptr{Cvoid}
    bytes::Int64
    buffer::Ptr{Cvoid}
end

"Whether the loaded table has ABI 1.4's members (streams, events, interop)."
has_streams() = (load(); unsafe_load(Ptr{UInt32}(API[])) >= API_BYTES_1_4)
"Whether the loaded table has host_register and host_unregister (appended to ABI 1.4)."
has_host_register() = (load(); unsafe_load(Ptr{UInt32}(API[])) >= API_BYTES_HOST_REGISTER)
"Whether the loaded table has buffer_create_on (appended to ABI 1.4 after host_unregister)."
has_buffer_create_on() = (load(); unsafe_load(Ptr{UInt32}(API[])) >= API_BYTES_BUFFER_CREATE_ON)


"A failed clops call: `status` is the enum clops_status, `message` the library's (it names the
parameter, its value and what was expected)."
struct ClopsError <: Exception
    status::Int32
    message::String
end
Base.showerror(io::IO, e::ClopsError) =
    print(io, "ClopsError: ", status_name(e.status), ": ", e.message)

# ---- The loaded library (set once by load(), then only read) --------------------------------

const API = Ref{Ptr{UInt8}}(C_NULL)
const ENTRIES = Dict{Symbol,Ptr{Cvoid}}()
const LOAD_LOCK = ReentrantLock()

api_function(i) = unsafe_load(Ptr{Ptr{Cvoid}}(API[] + 8 + 8 * i))

"The plugin's file on this system: what the dynamic loader (Windows: the DLL search order, which
starts in the directory of julia.exe and ends with PATH) is asked for."
const PLUGIN_FILE = Sys.iswindows() ? "clops.dll" : "libclops.so.1"

"Loads the plugin by the hosts' rule (hosts/common/loader.h): \$CLOPS_LIBRARY alone when it is
set, else PLUGIN_FILE through the system's search; and checks that it serves ABI 1 with every
member this module uses. Called by Pool(); a second call does nothing."
function load()
    lock(LOAD_LOCK) do
        API[] != C_NULL && return nothing
        named = get(ENV, "CLOPS_LIBRARY", "")
        path = isempty(named) ? PLUGIN_FILE : named
        # Libdl maps the flags to LoadLibrary's behaviour on Windows (they are ignored there).
        handle = Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_LOCAL; throw_error=false)
        handle === nothing && throw(ClopsError(ERR_NOT_FOUND, "cannot load libclops from $path" *
                                               (isempty(named) ? "" : " (from \$CLOPS_LIBRARY)")))
        plugin_entry = Libdl.dlsym(handle, :clops_plugin_entry; throw_error=false)
        plugin_entry === nothing &&
            throw(ClopsError(ERR_NOT_FOUND, "$path: no symbol clops_plugin_entry"))
        api = ccall(plugin_entry, Ptr{UInt8}, (UInt32,), ABI_MAJOR)
        api == C_NULL && throw(ClopsError(ERR_ABI_MISMATCH, "$path: ABI 1 is not served"))
        struct_size, abi_major = unsafe_load(Ptr{UInt32}(api)), unsafe_load(Ptr{UInt16}(api + 4))
        if abi_major != ABI_MAJOR || struct_size < API_BYTES_NEEDED
            throw(ClopsError(ERR_ABI_MISMATCH, "$path: ABI $abi_major, table of $struct_size " *
                                               "bytes; this module needs ABI 1, $API_BYTES_NEEDED"))
        end
        API[] = api
        for name in (:gemm, :lu, :solve)
            ENTRIES[name] = op_entry(name)
        end
        return nothing
    end
end

function op_entry(name::Symbol)
    op = ccall(api_function(API_OP_FIND), Ptr{UInt8}, (Cstring,), String(name))
    op == C_NULL && return C_NULL # reported when the wrapper is called
    unsafe_load(Ptr{UInt32}(op)) < OP_ENTRY_OFFSET + 8 && return C_NULL
    unsafe_load(Ptr{Ptr{Cvoid}}(op + OP_ENTRY_OFFSET))
end

function entry(name::Symbol)
    API[] == C_NULL && load()
    f = ENTRIES[name]
    f == C_NULL && throw(ClopsError(ERR_NOT_FOUND, "the loaded libclops has no operator $name"))
    f
end

version() = (load(); unsafe_string(ccall(api_function(API_VERSION), Cstring, ())))
last_error() = unsafe_string(ccall(api_function(API_LAST_ERROR), Cstring, ()))
status_name(status) = API[] == C_NULL ? "status $status" :
    unsafe_string(ccall(api_function(API_STATUS_NAME), Cstring, (Int32,), status))

# Reads the message on the thread that made the call: no yield point lies between the two ccalls.
check(status::Int32) = status == 0 ? nothing : throw(ClopsError(status, last_error()))

# ---- Pools ----------------------------------------------------------------------------------

"Devices, queues and built kernels: the defaults (first GPU, else the CPU) or a configuration
file (configs/clops.cfg). Released by release!(pool), or by the garbage collector."
mutable struct Pool
    handle::Ptr{Cvoid}
    function Pool(config::Union{Nothing,AbstractString}=nothing)
        load()
        out = Ref{Ptr{Cvoid}}(C_NULL)
        status = config === nothing ?
            ccall(api_function(API_POOL_CREATE_DEFAULT), Int32, (Ptr{Ptr{Cvoid}},), out) :
            ccall(api_function(API_POOL_CREATE_FROM_FILE), Int32, (Cstring, Ptr{Ptr{Cvoid}}),
                  config, out)
        check(status)
        finalizer(release!, new(out[]))
    end
end

"Pool(f, config): runs f(pool) and releases the pool afterwards, as open(f, file) does."
function Pool(f::Function, config::Union{Nothing,AbstractString}=nothing)
    pool = Pool(config)
    try
        f(pool)
    finally
        release!(pool)
    end
end

"Releases the pool's devices and kernels; a second call does nothing."
function release!(pool::Pool)
    if pool.handle != C_NULL
        ccall(api_function(API_POOL_RELEASE), Cvoid, (Ptr{Cvoid},), pool.handle)
        pool.handle = C_NULL
    end
    nothing
end

live(pool::Pool) = pool.handle != C_NULL ? pool.handle :
    throw(ClopsError(ERR_INVALID_ARGUMENT, "the pool was released"))

# ---- Tensors over Julia arrays (the caller keeps them alive with GC.@preserve) ---------------

const Floats = Union{Float32,Float64}
dtype(::Type{Float32}) = F32
dtype(::Type{Float64}) = F64
dtype(::Type{Int32}) = I32

# Strides in elements as Julia reports them: (1, stride(A, 2)) for a Matrix or a column slice.
tensor(A::StridedMatrix{T}) where {T} =
    ClopsTensor(pointer(A), C_NULL, 0, dtype(T), 2, (size(A, 1), size(A, 2), 0, 0),
                (stride(A, 1), stride(A, 2), 0, 0))
tensor(v::StridedVector{T}) where {T} =
    ClopsTensor(pointer(v), C_NULL, 0, dtype(T), 1, (length(v), 0, 0, 0), (stride(v, 1), 0, 0, 0))
# A right-hand side vector as an N×1 matrix.
column(v::StridedVector{T}) where {T} =
    ClopsTensor(pointer(v), C_NULL, 0, dtype(T), 2, (length(v), 1, 0, 0),
                (stride(v, 1), max(length(v), 1), 0, 0))
operand(B::StridedMatrix) = tensor(B)
operand(b::StridedVector) = column(b)

const TensorRef = Ref{ClopsTensor} # passed as const struct clops_tensor * (a copy, kept alive)

# ---- Operators ------------------------------------------------------------------------------

"C = alpha op(A) op(B) + beta C in place (op = transpose when transA/transB); returns C."
function gemm!(pool::Pool, C::StridedMatrix{T}, A::StridedMatrix{T}, B::StridedMatrix{T};
               alpha::Real=1, beta::Real=0, transA::Bool=false,
               transB::Bool=false) where {T<:Floats}
    f = entry(:gemm)
    status = GC.@preserve A B C ccall(f, Int32,
        (Ptr{Cvoid}, TensorRef, TensorRef, TensorRef, Int32, Int32, Cdouble, Cdouble),
        live(pool), tensor(A), tensor(B), tensor(C), transA, transB, alpha, beta)
    check(status)
    C
end

"P A = L U in place with partial pivoting (LAPACK getrf). Returns (ipiv, info): 1-based row
interchanges, and 0 or the first k with U(k, k) exactly zero."
function lu!(pool::Pool, A::StridedMatrix{<:Floats})
    f = entry(:lu)
    ipiv, info = zeros(Int32, min(size(A)...)), zeros(Int32, 1)
    status = GC.@preserve A ipiv info ccall(f, Int32,
        (Ptr{Cvoid}, TensorRef, TensorRef, TensorRef, Int32),
        live(pool), tensor(A), tensor(ipiv), tensor(info), Int32(0)) # pivoting: 0 = "partial"
    check(status)
    ipiv, Int(info[1])
end

"A X = B in place (LAPACK gesv), like ldiv!: A becomes its LU factors, B becomes X; returns B.
A singular A throws SingularException(k) and leaves B untouched."
function solve!(pool::Pool, A::StridedMatrix{T}, B::StridedVecOrMat{T}) where {T<:Floats}
    f = entry(:solve)
    ipiv, info = zeros(Int32, size(A, 1)), zeros(Int32, 1)
    status = GC.@preserve A B ipiv info ccall(f, Int32,
        (Ptr{Cvoid}, TensorRef, TensorRef, TensorRef, TensorRef),
        live(pool), tensor(A), operand(B), tensor(ipiv), tensor(info))
    check(status)
    info[1] > 0 && throw(SingularException(Int(info[1])))
    B
end

end # module
