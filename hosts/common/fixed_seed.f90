! fixed_seed.f90 — the Fortran test programs' random inputs: random_number's sequence fixed by a
! seed the test names, so that a failure can be run again with the same numbers.
module fixed_seed
    implicit none
    private
    public :: random_seed_fixed

contains

    ! Seeds random_number with every element of the compiler's seed array equal to `value`.
    subroutine random_seed_fixed(value)
        integer, intent(in) :: value
        integer :: n
        integer, allocatable :: seed(:)
        call random_seed(size=n)
        allocate (seed(n))
        seed = value
        call random_seed(put=seed)
    end subroutine

end module fixed_seed
