! test_error_stop.f90 — a failed call with no `status` argument stops the program with the
! plugin's message on stderr (run by ctest through hosts/cli/tests/expect.cmake, which checks
! the exit code and the message).
program test_error_stop
    use, intrinsic :: iso_fortran_env, only: real64
    use clops
    implicit none
    type(clops_pool) :: pool
    real(real64) :: a(5, 4), b(3, 6), c(5, 6)
    if (clops_pool_create(pool) /= CLOPS_OK) then
        print *, 'no pool: ', clops_error_message()
        stop 3
    end if
    a = 1
    b = 1
    c = 0
    call gemm(pool, a, b, c) ! inner dimensions 4 and 3: stops here
    print *, 'gemm returned: the failure did not stop the program'
end program test_error_stop
