! test_fortran.f90 — an ordinary Fortran program calling BLAS/LAPACK, linked with
! libclops_lapack: dgesv, dgemm and sgetrf + sgetrs on column-major arrays with padded leading
! dimensions, each judged by its residual; prints PASS/FAIL and stops with 1 on a failure.
! Output is list-directed: libgfortran's parsing of a format string trips ASan's
! strict_string_checks (CI's sanitizer run), the literal having no terminating NUL.
program test_fortran
  use fixed_seed, only: random_seed_fixed
  implicit none
  integer, parameter :: dp = kind(1.0d0), sp = kind(1.0)
  integer :: failures = 0

  call random_seed_fixed(20240611)
  call test_dgesv()
  call test_dgemm()
  call test_sgetrf_sgetrs()
  if (failures /= 0) then
    print *, 'FAILED (', failures, ' checks)'
    error stop 1
  end if
  print *, 'ALL PASS'

contains

  subroutine report(ok, what, value, bound)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    real(dp), intent(in) :: value, bound
    if (ok) then
      print *, 'PASS ', what, ': ', value, ' <= ', bound
    else
      print *, 'FAIL ', what, ': ', value, ' > ', bound
      failures = failures + 1
    end if
  end subroutine

  ! A x = b, N = 37, 3 right-hand sides, lda = 41, ldb = 40: LAPACK's ratio
  ! ||A x - b|| / (||A|| ||x|| N eps) must be small, and info 0.
  subroutine test_dgesv()
    integer, parameter :: n = 37, nrhs = 3, lda = 41, ldb = 40
    real(dp) :: a(lda, n), a0(lda, n), b(ldb, nrhs), x(ldb, nrhs), r(n, nrhs), ratio
    integer :: ipiv(n), info
    call random_number(a)
    a = a - 0.5_dp
    call random_number(b)
    a0 = a
    x = b
    call dgesv(n, nrhs, a, lda, ipiv, x, ldb, info)
    r = matmul(a0(1:n, 1:n), x(1:n, :)) - b(1:n, :)
    ratio = maxval(abs(r)) / (maxval(sum(abs(a0(1:n, 1:n)), dim=2)) * maxval(abs(x(1:n, :))) &
            * n * epsilon(1.0_dp))
    call report(info == 0 .and. all(ipiv >= 1) .and. all(ipiv <= n), &
                'dgesv info = 0, pivots in range', real(abs(info), dp), 0.0_dp)
    call report(ratio < 30.0_dp, 'dgesv 37x37 residual ratio', ratio, 30.0_dp)
  end subroutine

  ! C = alpha A^T B + beta C with A stored K x M (lda = 35), M = 23, N = 19, K = 31.
  subroutine test_dgemm()
    integer, parameter :: m = 23, n = 19, k = 31, lda = 35, ldb = 32, ldc = 24
    real(dp) :: a(lda, m), b(ldb, n), c(ldc, n), c0(ldc, n), want(m, n), err
    real(dp), parameter :: alpha = 1.5_dp, beta = -0.5_dp
    call random_number(a)
    call random_number(b)
    call random_number(c)
    c0 = c
    call dgemm('T', 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    want = alpha * matmul(transpose(a(1:k, 1:m)), b(1:k, 1:n)) + beta * c0(1:m, :)
    err = maxval(abs(c(1:m, :) - want))
    call report(err < k * 4 * epsilon(1.0_dp), 'dgemm T,N 23x19x31 max error', err, &
                k * 4 * epsilon(1.0_dp))
    err = maxval(abs(c(m + 1:, :) - c0(m + 1:, :)))
    call report(.not. (err > 0.0_dp), 'dgemm leaves the padding rows of C', err, 0.0_dp)
  end subroutine

  ! A^T x = b in single precision through sgetrf then sgetrs('T'), N = 29, lda = 32.
  subroutine test_sgetrf_sgetrs()
    integer, parameter :: n = 29, lda = 32, ldb = 30
    real(sp) :: a(lda, n), lu(lda, n), b(ldb, 1), x(ldb, 1)
    real(dp) :: r(n), ratio
    integer :: ipiv(n), info, info2
    call random_number(a)
    a = a - 0.5_sp
    call random_number(b)
    lu = a
    call sgetrf(n, n, lu, lda, ipiv, info)
    x = b
    call sgetrs('T', n, 1, lu, lda, ipiv, x, ldb, info2)
    r = matmul(transpose(real(a(1:n, 1:n), dp)), real(x(1:n, 1), dp)) - real(b(1:n, 1), dp)
    ratio = maxval(abs(r)) / (maxval(sum(abs(real(a(1:n, 1:n), dp)), dim=1)) &
            * maxval(abs(real(x(1:n, 1), dp))) * n * real(epsilon(1.0_sp), dp))
    call report(info == 0 .and. info2 == 0, 'sgetrf/sgetrs info = 0', &
                real(abs(info) + abs(info2), dp), 0.0_dp)
    call report(ratio < 30.0_dp, 'sgetrf + sgetrs(T) 29x29 residual ratio', ratio, 30.0_dp)
  end subroutine

end program
