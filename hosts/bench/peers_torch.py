"""peers_torch.py OUT.csv SIZES_GEMM SIZES_LU — cuBLAS (torch.matmul) and cuSOLVER (torch.linalg.lu_factor)
rows in clops-bench's CSV columns, on the same GPU: operands on the device, one warm-up, median
of 5 calls timed with CUDA events."""
import datetime, statistics, sys
import torch

out, gemm_sizes, lu_sizes = sys.argv[1], sys.argv[2], sys.argv[3]
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.cuda.get_device_name(0)
date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
rows = []

def timed(fn, reps=5):
    fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)

for name, dt in (("f32", torch.float32), ("f64", torch.float64)):
    for n in map(int, gemm_sizes.split(",")):
        A = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        B = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        ms = timed(lambda: A @ B)
        rows.append(("gemm", "gemm", name, "cublas", n, "matrix order", ms, 2 * n**3 / ms / 1e9))
        del A, B
    for n in map(int, lu_sizes.split(",")):
        A = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        ms = timed(lambda: torch.linalg.lu_factor(A))
        rows.append(("lu", "lu", name, "cusolver", n, "matrix order", ms, 2 / 3 * n**3 / ms / 1e9))
        del A
with open(out, "w") as f:
    f.write("area,op,dtype,impl,n,n_unit,time_ms,rate,unit,device,date\n")
    for r in rows:
        f.write("%s,%s,%s,%s,%d,%s,%.6g,%.6g,TFLOP/s,%s,%s\n" % (r + (dev, date)))
        print(r)
