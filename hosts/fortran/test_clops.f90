! test_clops.f90 — the Fortran binding against libclops: the bind(c) mirrors match the C layout,
! GEMM on column-major arrays and array sections matches matmul, LU reconstructs P·A, solve and
! lu_solve reach LAPACK's residual bound, singular matrices and bad arguments are reported, and
! (ABI 1.4) a gemm submitted on a stream completes through its event with matmul's result, a
! gemm on operands inside registered host memory matches matmul, and a buffer made on a chosen
! device lives there and gives back what was written into it.
program test_clops
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: real32, real64
    use clops
    use fixed_seed, only: random_seed_fixed
    implicit none

    interface
        function c_abi_layout(out, capacity) bind(c, name='clops_test_abi_layout') result(count)
            import :: c_int32_t, c_int64_t
            integer(c_int64_t), intent(out) :: out(*)
            integer(c_int32_t), value :: capacity
            integer(c_int32_t) :: count
        end function
    end interface

    ! The table's buffer_upload and buffer_download (one prototype: the host pointer is const
    ! in upload) and buffer_size, which module clops does not wrap.
    abstract interface
        function buffer_transfer_fn(buffer, offset, host, bytes) bind(c) result(status)
            import :: c_int32_t, c_int64_t, c_ptr
            type(c_ptr), value :: buffer
            integer(c_int64_t), value :: offset
            type(c_ptr), value :: host
            integer(c_int64_t), value :: bytes
            integer(c_int32_t) :: status
        end function
        function buffer_size_fn(buffer) bind(c) result(bytes)
            import :: c_int64_t, c_ptr
            type(c_ptr), value :: buffer
            integer(c_int64_t) :: bytes
        end function
    end interface

    ! LAPACK's test suite accepts scaled residuals below 30.
    real(real64), parameter :: RESIDUAL_BOUND = 30
    ! sizeof(struct clops_op) in ABI 1.1: it ended with `entry`.
    integer(c_int32_t), parameter :: OP_BYTES_BEFORE_PARAM_SIZE = 56
    type(clops_pool) :: pool
    integer(c_int32_t) :: status

    call random_seed_fixed(20261123)
    call test_mirrors_match_c_layout()
    status = clops_load()
    call expect(status == CLOPS_OK, 'clops_load: '//clops_error_message())
    call test_table_size_covers_mirror()
    call test_calls_without_pool_are_rejected()
    call test_descriptors_walked_by_param_size()
    call test_op_param_steps_by_the_plugins_size()
    status = clops_pool_create(pool)
    call expect(status == CLOPS_OK, 'clops_pool_create: '//clops_error_message())

    call test_gemm_f64_matches_matmul(37, 23, 41, .false., .false.)
    call test_gemm_f64_matches_matmul(29, 50, 17, .true., .true.)
    call test_gemm_f32_matches_matmul(45, 31, 19)
    call test_gemm_on_sections_writes_in_place()
    call test_lu_reconstructs_pa(50, 50)
    call test_lu_reconstructs_pa(53, 37)
    call test_solve_residual_50()
    call test_solve_vector_f32_residual()
    call test_lu_solve_transposed_residual()
    call test_singular_matrix_reports_info()
    call test_bad_argument_status_and_message()
    call test_gemm_on_a_stream(41, 29, 37)
    call test_gemm_reads_registered_memory(43, 31, 53)
    call test_host_register_refusals_name_the_range()
    call test_buffer_created_on_device_0_round_trips(1237)

    call clops_pool_release(pool)
    call clops_pool_release(pool) ! a released pool is null: the second call does nothing
    call expect(.not. c_associated(pool%handle), 'released pool has a null handle')
    print *, 'All Fortran tests PASS'

contains

    subroutine expect(condition, what)
        logical, intent(in) :: condition
        character(len=*), intent(in) :: what
        if (.not. condition) then
            print *, 'FAIL: ', what
            error stop 'test_clops: a check failed'
        end if
    end subroutine

    subroutine pass(name, value)
        character(len=*), intent(in) :: name
        real(real64), intent(in) :: value
        print *, name//': PASS, scaled error '//text(value)
    end subroutine

    ! List-directed conversions: a format string would trip AddressSanitizer's
    ! strict_string_checks in libgfortran (it strndup()s the unterminated literal).
    function text(value) result(s)
        class(*), intent(in) :: value
        character(len=:), allocatable :: s
        character(len=40) :: buffer
        select type (value)
        type is (real(real64))
            write (buffer, *) real(value, real32)
        type is (integer(c_int32_t))
            write (buffer, *) value
        type is (integer(c_int64_t))
            write (buffer, *) value
        class default
            buffer = '?'
        end select
        s = trim(adjustl(buffer))
    end function

    ! Uniform in [-1, 1): signs mixed, as in LAPACK's test matrices.
    subroutine random_matrix(a)
        real(real64), intent(out) :: a(:, :)
        call random_number(a)
        a = 2 * a - 1
    end subroutine

    integer(c_intptr_t) function address(p)
        type(c_ptr), intent(in) :: p
        address = transfer(p, address)
    end function

    ! ---- Layout ---------------------------------------------------------------------------

    ! Sizes and member offsets of the mirrors, in abi_layout.c's order.
    subroutine fortran_layout(out, count)
        integer(c_int64_t), intent(out) :: out(:)
        integer, intent(out) :: count
        type(clops_tensor), target :: t
        type(clops_param), target :: p
        type(clops_op), target :: o
        type(clops_arg), target :: a
        type(clops_device_info), target :: di
        type(clops_stats), target :: st
        type(clops_op_stats), target :: os
        type(clops_device_stats), target :: ds
        type(clops_api), target :: api
        type(clops_output_spec), target :: spec
        type(clops_stream_create_args), target :: sc
        type(clops_stream_release_args), target :: sr
        type(clops_stream_wait_args), target :: sw
        type(clops_submit_args), target :: sa
        type(clops_event_query_args), target :: eq
        type(clops_event_wait_args), target :: ew
        type(clops_event_callback_args), target :: ec
        type(clops_event_cancel_args), target :: ex
        type(clops_event_release_args), target :: er
        type(clops_event_cl_args), target :: el
        type(clops_pool_from_cl_args), target :: pc
        type(clops_buffer_wrap_args), target :: bw
        type(clops_buffer_cl_args), target :: bc
        type(clops_memory_stats_args), target :: ms
        type(clops_buffer_copy_args), target :: bp
        type(clops_host_register_args), target :: hr
        type(clops_buffer_create_args), target :: bo
        count = 0
        call put_size(out, count, c_sizeof(t))
        call put_offsets(out, count, c_loc(t), [c_loc(t%buffer), c_loc(t%offset), c_loc(t%dtype), c_loc(t%rank), &
                           c_loc(t%shape), c_loc(t%strides)])
        call put_size(out, count, c_sizeof(p))
        call put_offsets(out, count, c_loc(p), [c_loc(p%kind), c_loc(p%dtypes), c_loc(p%enum_values), &
                           c_loc(p%default_value), c_loc(p%doc)])
        call put_size(out, count, c_sizeof(o))
        call put_offsets(out, count, c_loc(o), [c_loc(o%version), c_loc(o%name), c_loc(o%summary), c_loc(o%doc), &
                           c_loc(o%param_count), c_loc(o%reserved), c_loc(o%params), &
                           c_loc(o%entry), c_loc(o%param_size), c_loc(o%reserved2)])
        call put_size(out, count, c_sizeof(a))
        call put_offsets(out, count, c_loc(a), [c_loc(a%kind), c_loc(a%reserved), c_loc(a%tensor), c_loc(a%i), &
                           c_loc(a%d), c_loc(a%s)])
        call put_size(out, count, c_sizeof(di))
        call put_offsets(out, count, c_loc(di), [c_loc(di%type), c_loc(di%name), c_loc(di%vendor), &
                            c_loc(di%platform), c_loc(di%driver_version), &
                            c_loc(di%opencl_version), c_loc(di%global_mem_bytes), &
                            c_loc(di%local_mem_bytes), c_loc(di%compute_units), &
                            c_loc(di%queues), c_loc(di%fp64), c_loc(di%platform_index), &
                            c_loc(di%device_index), c_loc(di%reserved)])
        call put_size(out, count, c_sizeof(st))
        call put_offsets(out, count, c_loc(st), [c_loc(st%reserved), c_loc(st%programs_built), &
                            c_loc(st%programs_loaded), c_loc(st%cache_rejected), &
                            c_loc(st%calls), c_loc(st%bytes_uploaded), &
                            c_loc(st%bytes_downloaded), c_loc(st%build_ns)])
        call put_size(out, count, c_sizeof(os))
        call put_offsets(out, count, c_loc(os), [c_loc(os%reserved), c_loc(os%name), c_loc(os%calls), &
                            c_loc(os%failures), c_loc(os%device_ns)])
        call put_size(out, count, c_sizeof(ds))
        call put_offsets(out, count, c_loc(ds), [c_loc(ds%reserved), c_loc(ds%tasks), c_loc(ds%busy_ns)])
        call put_size(out, count, c_sizeof(api))
        call put_offsets(out, count, c_loc(api), [c_loc(api%abi_major), c_loc(api%abi_minor), c_loc(api%version), &
                             c_loc(api%last_error), c_loc(api%status_name), &
                             c_loc(api%set_log_callback), c_loc(api%devices_list), &
                             c_loc(api%pool_create_default), c_loc(api%pool_create_from_file), &
                             c_loc(api%pool_create_from_string), c_loc(api%pool_release), &
                             c_loc(api%pool_device_count), c_loc(api%pool_device_info), &
                             c_loc(api%pool_stats), c_loc(api%pool_op_stats), &
                             c_loc(api%buffer_create), c_loc(api%buffer_upload), &
                             c_loc(api%buffer_download), c_loc(api%buffer_release), &
                             c_loc(api%buffer_size), c_loc(api%op_count), c_loc(api%op_at), &
                             c_loc(api%op_find), c_loc(api%op_index), c_loc(api%invoke), &
                             c_loc(api%pool_device_stats), c_loc(api%invoke_sized), &
                             c_loc(api%check_sized), c_loc(api%stream_create), &
                             c_loc(api%stream_release), c_loc(api%stream_wait), &
                             c_loc(api%submit), c_loc(api%event_query), c_loc(api%event_wait), &
                             c_loc(api%event_on_complete), c_loc(api%event_cancel), &
                             c_loc(api%event_release), c_loc(api%event_cl_event), &
                             c_loc(api%pool_create_from_cl), c_loc(api%buffer_wrap_cl), &
                             c_loc(api%buffer_cl), c_loc(api%memory_stats), &
                             c_loc(api%buffer_copy), c_loc(api%host_register), &
                             c_loc(api%host_unregister), c_loc(api%buffer_create_on)])
        call put_size(out, count, c_sizeof(spec))
        call put_offsets(out, count, c_loc(spec), [c_loc(spec%param), c_loc(spec%dtype), &
                             c_loc(spec%rank), c_loc(spec%shape)])
        call put_size(out, count, c_sizeof(sc))
        call put_offsets(out, count, c_loc(sc), [c_loc(sc%device), c_loc(sc%pool), &
                         c_loc(sc%cl_queue), c_loc(sc%stream)])
        call put_size(out, count, c_sizeof(sr))
        call put_offsets(out, count, c_loc(sr), [c_loc(sr%reserved), c_loc(sr%stream)])
        call put_size(out, count, c_sizeof(sw))
        call put_offsets(out, count, c_loc(sw), [c_loc(sw%event_count), c_loc(sw%stream), &
                         c_loc(sw%events)])
        call put_size(out, count, c_sizeof(sa))
        call put_offsets(out, count, c_loc(sa), [c_loc(sa%op_index), c_loc(sa%stream), &
                         c_loc(sa%args), c_loc(sa%nargs), c_loc(sa%arg_size), &
                         c_loc(sa%wait_events), c_loc(sa%wait_count), c_loc(sa%cl_wait_count), &
                         c_loc(sa%cl_wait_events), c_loc(sa%on_complete), c_loc(sa%user), &
                         c_loc(sa%event)])
        call put_size(out, count, c_sizeof(eq))
        call put_offsets(out, count, c_loc(eq), [c_loc(eq%state), c_loc(eq%event), &
                         c_loc(eq%status), c_loc(eq%reserved), c_loc(eq%message), &
                         c_loc(eq%progress)])
        call put_size(out, count, c_sizeof(ew))
        call put_offsets(out, count, c_loc(ew), [c_loc(ew%count), c_loc(ew%events), &
                         c_loc(ew%timeout_ns), c_loc(ew%wait_all), c_loc(ew%ready)])
        call put_size(out, count, c_sizeof(ec))
        call put_offsets(out, count, c_loc(ec), [c_loc(ec%reserved), c_loc(ec%event), &
                         c_loc(ec%fn), c_loc(ec%user)])
        call put_size(out, count, c_sizeof(ex))
        call put_offsets(out, count, c_loc(ex), [c_loc(ex%reserved), c_loc(ex%event)])
        call put_size(out, count, c_sizeof(er))
        call put_offsets(out, count, c_loc(er), [c_loc(er%reserved), c_loc(er%event)])
        call put_size(out, count, c_sizeof(el))
        call put_offsets(out, count, c_loc(el), [c_loc(el%reserved), c_loc(el%event), &
                         c_loc(el%cl_event)])
        call put_size(out, count, c_sizeof(pc))
        call put_offsets(out, count, c_loc(pc), [c_loc(pc%device_count), c_loc(pc%cl_context), &
                         c_loc(pc%cl_devices), c_loc(pc%cl_queues), c_loc(pc%config_text), &
                         c_loc(pc%pool)])
        call put_size(out, count, c_sizeof(bw))
        call put_offsets(out, count, c_loc(bw), [c_loc(bw%device), c_loc(bw%pool), &
                         c_loc(bw%cl_mem), c_loc(bw%buffer), c_loc(bw%bytes)])
        call put_size(out, count, c_sizeof(bc))
        call put_offsets(out, count, c_loc(bc), [c_loc(bc%device), c_loc(bc%buffer), &
                         c_loc(bc%cl_mem), c_loc(bc%cl_context)])
        call put_size(out, count, c_sizeof(ms))
        call put_offsets(out, count, c_loc(ms), [c_loc(ms%device), c_loc(ms%pool), &
                         c_loc(ms%allocated_bytes), c_loc(ms%peak_bytes), c_loc(ms%buffers), &
                         c_loc(ms%limit_bytes)])
        call put_size(out, count, c_sizeof(bp))
        call put_offsets(out, count, c_loc(bp), [c_loc(bp%wait_count), c_loc(bp%stream), &
                         c_loc(bp%src), c_loc(bp%src_offset), c_loc(bp%dst), &
                         c_loc(bp%dst_offset), c_loc(bp%bytes), c_loc(bp%wait_events), &
                         c_loc(bp%event)])
        call put_size(out, count, c_sizeof(hr))
        call put_offsets(out, count, c_loc(hr), [c_loc(hr%flags), c_loc(hr%pool), &
                         c_loc(hr%data), c_loc(hr%bytes)])
        call put_size(out, count, c_sizeof(bo))
        call put_offsets(out, count, c_loc(bo), [c_loc(bo%device), c_loc(bo%pool), &
                         c_loc(bo%bytes), c_loc(bo%buffer)])
    end subroutine

    subroutine put_size(out, count, value)
        integer(c_int64_t), intent(inout) :: out(:)
        integer, intent(inout) :: count
        integer(c_size_t), intent(in) :: value
        count = count + 1
        out(count) = int(value, c_int64_t)
    end subroutine

    subroutine put_offsets(out, count, base, members)
        integer(c_int64_t), intent(inout) :: out(:)
        integer, intent(inout) :: count
        type(c_ptr), intent(in) :: base, members(:)
        integer :: i
        do i = 1, size(members)
            count = count + 1
            out(count) = int(address(members(i)) - address(base), c_int64_t)
        end do
    end subroutine

    subroutine test_mirrors_match_c_layout()
        integer(c_int64_t) :: expected(400), actual(400)
        integer :: n_expected, n_actual, i
        n_expected = c_abi_layout(expected, size(expected, kind=c_int32_t))
        call fortran_layout(actual, n_actual)
        call expect(n_actual == n_expected, 'layout lists have one length')
        do i = 1, n_expected
            if (actual(i) /= expected(i)) then
                print *, 'layout entry '//text(i)//': Fortran '//text(actual(i))//', C '// &
                    text(expected(i))
                call expect(.false., 'bind(c) mirrors match abi/clops.h')
            end if
        end do
        print *, 'mirrors_match_c_layout: PASS ('//text(n_expected)//' sizes and offsets)'
    end subroutine

    subroutine test_table_size_covers_mirror()
        type(clops_api), pointer :: api
        api => clops_get_api()
        call expect(associated(api), 'clops_get_api after clops_load')
        call expect(api%abi_major == CLOPS_ABI_MAJOR, 'table serves ABI 1')
        ! The plugin of this tree has exactly the members of our mirror.
        call expect(int(api%struct_size, c_size_t) == c_sizeof(api), 'struct_size = sizeof mirror')
        call expect(len(clops_version()) > 0, 'version string')
        print *, 'table_size_covers_mirror: PASS (libclops '//clops_version()//', ABI '// &
            text(int(api%abi_major, c_int32_t))//'.'//text(int(api%abi_minor, c_int32_t))//')'
    end subroutine

    ! ---- Descriptors (ABI 1.2: sized arrays) ----------------------------------------------

    subroutine test_descriptors_walked_by_param_size()
        character(len=*), parameter :: names(8) = [character(len=9) :: 'a', 'b', 'c', &
                                                   'trans_a', 'trans_b', 'alpha', 'beta', &
                                                   'precision']
        type(clops_op), pointer :: op
        type(clops_param) :: mirror
        integer :: i
        op => clops_op_find('gemm')
        call expect(associated(op), 'clops_op_find(gemm)')
        call expect(.not. associated(clops_op_find('gemmm')), 'clops_op_find of an unknown name')
        call expect(op%struct_size >= c_sizeof(op), 'the descriptor holds param_size')
        call expect(int(op%param_size, c_size_t) == c_sizeof(mirror), &
                    'param_size = sizeof(struct clops_param)')
        call expect(op%param_count == size(names), 'gemm has 8 parameters')
        do i = 1, size(names)
            call expect(clops_param_name(clops_op_param(op, i)) == trim(names(i)), &
                        'gemm parameter '//trim(names(i)))
        end do
        call expect(.not. associated(clops_op_param(op, 0)), 'parameter 0 is out of range')
        call expect(.not. associated(clops_op_param(op, 9)), 'parameter 9 is out of range')
        print *, 'descriptors_walked_by_param_size: PASS'
    end subroutine

    ! Descriptors of other plugins: one whose struct clops_param grew by 24 bytes (the bytes
    ! this mirror does not know hold -1), and one older than ABI 1.2, without param_size.
    subroutine test_op_param_steps_by_the_plugins_size()
        type, bind(c) :: grown_param
            type(clops_param) :: param
            integer(c_int64_t) :: appended(3)
        end type
        type(grown_param), target :: grown(3)
        type(clops_param), target :: old(3)
        type(clops_op) :: op
        character(kind=c_char), target :: names(2, 3)
        integer :: i
        names = reshape([character(kind=c_char) :: 'x', c_null_char, 'y', c_null_char, &
                         'z', c_null_char], [2, 3])
        do i = 1, 3
            grown(i)%param = clops_param(c_loc(names(1, i)), CLOPS_PARAM_INT64, 0, c_null_ptr, &
                                         c_null_ptr, c_null_ptr)
            grown(i)%appended = -1
            old(i) = grown(i)%param
        end do
        op = clops_op(int(c_sizeof(op), c_int32_t), 1, c_null_ptr, c_null_ptr, c_null_ptr, 3, &
                      0, c_loc(grown(1)), c_null_funptr, int(c_sizeof(grown(1)), c_int32_t), 0)
        do i = 1, 3
            call expect(clops_param_name(clops_op_param(op, i)) == names(1, i), &
                        'a grown clops_param is stepped by param_size')
        end do
        op%struct_size = OP_BYTES_BEFORE_PARAM_SIZE
        op%params = c_loc(old(1))
        op%param_size = 999 ! past the descriptor's struct_size: never read
        do i = 1, 3
            call expect(clops_param_name(clops_op_param(op, i)) == names(1, i), &
                        'a 1.1 descriptor is stepped by CLOPS_PARAM_SIZE_1_1')
        end do
        print *, 'op_param_steps_by_the_plugins_size: PASS'
    end subroutine

    ! ---- GEMM -----------------------------------------------------------------------------

    ! max|C - Cref| / (K ε (|α| max(|op(A)||op(B)|) + |β| max|C0|)): rounding of a K-term dot
    ! product in both results, each bounded by K ε times the magnitude of its terms.
    real(real64) function gemm_error(c, reference, a_abs_b_abs, c0, alpha, beta, k, eps)
        real(real64), intent(in) :: c(:, :), reference(:, :), a_abs_b_abs(:, :), c0(:, :)
        real(real64), intent(in) :: alpha, beta, eps
        integer, intent(in) :: k
        gemm_error = maxval(abs(c - reference)) / &
                     (k * eps * (abs(alpha) * maxval(a_abs_b_abs) + abs(beta) * maxval(abs(c0))))
    end function

    subroutine test_gemm_f64_matches_matmul(m, n, k, trans_a, trans_b)
        integer, intent(in) :: m, n, k
        logical, intent(in) :: trans_a, trans_b
        real(real64), allocatable :: a(:, :), b(:, :), c(:, :), c0(:, :), op_a(:, :), op_b(:, :)
        real(real64), parameter :: alpha = -1.5_real64, beta = 0.75_real64
        real(real64) :: error
        if (trans_a) then
            allocate (a(k, m))
        else
            allocate (a(m, k))
        end if
        if (trans_b) then
            allocate (b(n, k))
        else
            allocate (b(k, n))
        end if
        allocate (c(m, n))
        call random_matrix(a)
        call random_matrix(b)
        call random_matrix(c)
        c0 = c
        op_a = a
        if (trans_a) op_a = transpose(a)
        op_b = b
        if (trans_b) op_b = transpose(b)
        call gemm(pool, a, b, c, alpha, beta, trans_a, trans_b, status=status)
        call expect(status == CLOPS_OK, 'gemm f64: '//clops_error_message())
        error = gemm_error(c, alpha * matmul(op_a, op_b) + beta * c0, &
                           matmul(abs(op_a), abs(op_b)), c0, alpha, beta, k, epsilon(1.0_real64))
        call expect(error < 2, 'gemm f64 matches matmul')
        call pass('gemm_f64_matches_matmul', error)
    end subroutine

    subroutine test_gemm_f32_matches_matmul(m, n, k)
        integer, intent(in) :: m, n, k
        real(real64) :: a64(m, k), b64(k, n), c64(m, n)
        real(real32) :: a(m, k), b(k, n), c(m, n)
        real(real64) :: error, reference(m, n)
        call random_matrix(a64)
        call random_matrix(b64)
        call random_matrix(c64)
        a = real(a64, real32)
        b = real(b64, real32)
        c = real(c64, real32)
        ! The reference in double from the same (rounded) single inputs.
        reference = 2 * matmul(real(a, real64), real(b, real64)) + real(c, real64)
        call gemm(pool, a, b, c, 2.0_real32, 1.0_real32)
        error = gemm_error(real(c, real64), reference, &
                           matmul(abs(real(a, real64)), abs(real(b, real64))), &
                           real(c64, real64), 2.0_real64, 1.0_real64, k, &
                           real(epsilon(1.0_real32), real64))
        call expect(error < 2, 'gemm f32 matches matmul')
        call pass('gemm_f32_matches_matmul', error)
    end subroutine

    ! Sections of larger arrays reach clops with their leading dimension (strides {1, 60}), and
    ! only the section of C is written.
    subroutine test_gemm_on_sections_writes_in_place()
        integer, parameter :: m = 21, k = 13, n = 17
        real(real64), parameter :: sentinel = 12345
        real(real64) :: big_a(60, 40), big_b(30, 30), big_c(50, 45), before(50, 45)
        real(real64) :: reference(m, n), zeros(m, n), error
        call random_matrix(big_a)
        call random_matrix(big_b)
        big_c = sentinel
        before = big_c
        reference = matmul(big_a(3:m + 2, 5:k + 4), big_b(2:k + 1, 7:n + 6))
        ! beta = 0: the sentinel values inside the section are not read.
        call gemm(pool, big_a(3:m + 2, 5:k + 4), big_b(2:k + 1, 7:n + 6), &
                  big_c(4:m + 3, 9:n + 8))
        zeros = 0
        error = gemm_error(big_c(4:m + 3, 9:n + 8), reference, &
                           matmul(abs(big_a(3:m + 2, 5:k + 4)), abs(big_b(2:k + 1, 7:n + 6))), &
                           zeros, 1.0_real64, 0.0_real64, k, epsilon(1.0_real64))
        call expect(error < 2, 'gemm on sections matches matmul')
        big_c(4:m + 3, 9:n + 8) = sentinel
        call expect(maxval(abs(big_c - before)) <= 0, 'gemm writes only the section of C')
        call pass('gemm_on_sections_writes_in_place', error)
    end subroutine

    ! ---- LU and solve ---------------------------------------------------------------------

    real(real64) function norm1(a)
        real(real64), intent(in) :: a(:, :)
        norm1 = maxval(sum(abs(a), dim=1))
    end function

    ! ‖P·A − L·U‖₁ / (N ‖A‖₁ ε), as LAPACK's xGET01; ipiv checked to be 1-based, i <= ipiv(i) <= M.
    subroutine test_lu_reconstructs_pa(m, n)
        integer, intent(in) :: m, n
        real(real64) :: a(m, n), a0(m, n), lower(m, min(m, n)), upper(min(m, n), n), row(n)
        integer(c_int32_t) :: ipiv(min(m, n)), info
        integer :: i, j, p
        real(real64) :: error
        call random_matrix(a)
        a0 = a
        ipiv = -1
        call lu(pool, a, ipiv, info)
        call expect(info == 0, 'lu info = 0 on a random matrix')
        do i = 1, min(m, n)
            call expect(ipiv(i) >= i .and. ipiv(i) <= m, 'lu pivots are 1-based, i <= ipiv(i) <= M')
        end do
        lower = 0
        upper = 0
        do j = 1, min(m, n)
            lower(j, j) = 1
            lower(j + 1:m, j) = a(j + 1:m, j)
        end do
        do i = 1, min(m, n)
            upper(i, i:n) = a(i, i:n)
        end do
        do i = 1, min(m, n) ! P·A: LAPACK's interchanges, in order
            p = ipiv(i)
            row = a0(i, :)
            a0(i, :) = a0(p, :)
            a0(p, :) = row
        end do
        error = norm1(a0 - matmul(lower, upper)) / (n * norm1(a0) * epsilon(1.0_real64))
        call expect(error < RESIDUAL_BOUND, 'lu: P A = L U')
        call pass('lu_reconstructs_pa', error)
    end subroutine

    ! max over columns of ‖b − A x‖₁ / (N ‖A‖₁ ‖x‖₁ ε), as LAPACK's xGET02.
    real(real64) function solve_residual(a, x, b, eps)
        real(real64), intent(in) :: a(:, :), x(:, :), b(:, :), eps
        real(real64) :: r(size(b, 1), size(b, 2))
        integer :: j
        r = b - matmul(a, x)
        solve_residual = 0
        do j = 1, size(b, 2)
            solve_residual = max(solve_residual, sum(abs(r(:, j))) / &
                                 (size(a, 1) * norm1(a) * sum(abs(x(:, j))) * eps))
        end do
    end function

    subroutine test_solve_residual_50()
        integer, parameter :: n = 50, nrhs = 3
        real(real64) :: a(n, n), a0(n, n), b(n, nrhs), b0(n, nrhs), x_true(n, nrhs), error
        integer(c_int32_t) :: ipiv(n), info
        call random_matrix(a)
        call random_matrix(x_true)
        a0 = a
        b = matmul(a, x_true)
        b0 = b
        call solve(pool, a, b, ipiv, info, status)
        call expect(status == CLOPS_OK, 'solve: '//clops_error_message())
        call expect(info == 0, 'solve info = 0')
        error = solve_residual(a0, b, b0, epsilon(1.0_real64))
        call expect(error < RESIDUAL_BOUND, 'solve residual of a 50x50 system')
        call pass('solve_residual_50', error)
    end subroutine

    subroutine test_solve_vector_f32_residual()
        integer, parameter :: n = 50
        real(real64) :: a64(n, n), x64(n, 1)
        real(real32) :: a(n, n), b(n), b0(n), a0(n, n)
        integer(c_int32_t) :: ipiv(n), info
        real(real64) :: error
        call random_matrix(a64)
        call random_matrix(x64)
        a = real(a64, real32)
        a0 = a
        b = matmul(a, real(x64(:, 1), real32))
        b0 = b
        call solve(pool, a, b, ipiv, info)
        call expect(info == 0, 'solve f32 info = 0')
        error = solve_residual(real(a0, real64), reshape(real(b, real64), [n, 1]), &
                               reshape(real(b0, real64), [n, 1]), &
                               real(epsilon(1.0_real32), real64))
        call expect(error < RESIDUAL_BOUND, 'solve f32 vector residual')
        call pass('solve_vector_f32_residual', error)
    end subroutine

    subroutine test_lu_solve_transposed_residual()
        integer, parameter :: n = 47, nrhs = 2
        real(real64) :: a(n, n), a0(n, n), b(n, nrhs), b0(n, nrhs), error
        integer(c_int32_t) :: ipiv(n), info
        call random_matrix(a)
        call random_matrix(b)
        a0 = a
        b0 = b
        call lu(pool, a, ipiv, info)
        call expect(info == 0, 'lu info = 0')
        call lu_solve(pool, a, ipiv, b, trans=.true.)
        error = solve_residual(transpose(a0), b, b0, epsilon(1.0_real64))
        call expect(error < RESIDUAL_BOUND, 'lu_solve A^T x = b residual')
        call pass('lu_solve_transposed_residual', error)
    end subroutine

    ! A zero third column: info = 3 (LAPACK's), and solve leaves b untouched.
    subroutine test_singular_matrix_reports_info()
        integer, parameter :: n = 12
        real(real64) :: a(n, n), b(n), b0(n)
        integer(c_int32_t) :: ipiv(n), info
        call random_matrix(a)
        a(:, 3) = 0
        call random_number(b)
        b0 = b
        call solve(pool, a, b, ipiv, info, status)
        call expect(status == CLOPS_OK, 'solve of a singular matrix returns CLOPS_OK')
        call expect(info == 3, 'solve info = 3 for a zero third column')
        call expect(maxval(abs(b - b0)) <= 0, 'b untouched when A is singular')
        print *, 'singular_matrix_reports_info: PASS (info = '//text(info)//')'
    end subroutine

    ! Inner dimensions that differ: CLOPS_ERR_INVALID_ARGUMENT, a message naming the parameter,
    ! and C unchanged.
    subroutine test_bad_argument_status_and_message()
        real(real64) :: a(5, 4), b(3, 6), c(5, 6)
        character(len=:), allocatable :: message
        a = 1
        b = 1
        c = 7
        call gemm(pool, a, b, c, status=status)
        message = clops_error_message()
        print *, '  gemm 5x4 * 3x6 -> '//clops_status_name(status)//': '//message
        call expect(status == CLOPS_ERR_INVALID_ARGUMENT, 'mismatched gemm is INVALID_ARGUMENT')
        call expect(clops_status_name(status) == 'CLOPS_ERR_INVALID_ARGUMENT', 'status name')
        call expect(index(message, 'gemm') > 0 .and. index(message, "'b'") > 0, &
                    'the message names the operator and the parameter')
        call expect(maxval(abs(c - 7)) <= 0, 'a rejected call changes nothing')
        print *, 'bad_argument_status_and_message: PASS'
    end subroutine

    subroutine test_calls_without_pool_are_rejected()
        type(clops_pool) :: none
        real(real64) :: a(2, 2), b(2, 2), c(2, 2)
        a = 1
        b = 1
        c = 0
        call gemm(none, a, b, c, status=status)
        call expect(status == CLOPS_ERR_INVALID_ARGUMENT, 'gemm on no pool is INVALID_ARGUMENT')
        call expect(index(clops_error_message(), 'pool') > 0, 'the message names the pool')
        print *, 'calls_without_pool_are_rejected: PASS'
    end subroutine

    ! ---- Non-blocking calls (ABI 1.4) -----------------------------------------------------

    ! C = A B submitted on a stream through the bind(c) args mirrors: submit returns at once with
    ! an event; C is written only once the event completes, which event_wait waits for.
    subroutine test_gemm_on_a_stream(m, n, k)
        integer, intent(in) :: m, n, k
        real(real64), allocatable, target :: a(:, :), b(:, :), c(:, :)
        type(clops_api), pointer :: api
        type(clops_tensor), target :: ta, tb, tc
        type(clops_arg), target :: args(4)
        character(kind=c_char, len=2), target :: name_a = 'a'//c_null_char, &
                                                 name_b = 'b'//c_null_char, name_c = 'c'//c_null_char
        character(kind=c_char, len=5), target :: name_beta = 'beta'//c_null_char
        type(clops_stream_create_args), target :: create
        type(clops_submit_args), target :: submit
        type(clops_event_wait_args), target :: wait
        type(clops_event_query_args), target :: query
        type(clops_event_release_args), target :: release_event
        type(clops_stream_release_args), target :: release_stream
        type(c_ptr), target :: events(1)
        real(real64) :: error

        api => clops_get_api()
        call expect(clops_api_has_streams(), 'the table has ABI 1.4 streams')
        allocate (a(m, k), b(k, n), c(m, n))
        call random_matrix(a)
        call random_matrix(b)
        c = -7
        ta = column_major(a)
        tb = column_major(b)
        tc = column_major(c)
        args(1) = clops_arg(name=c_loc(name_a), kind=CLOPS_PARAM_TENSOR_IN, tensor=c_loc(ta))
        args(2) = clops_arg(name=c_loc(name_b), kind=CLOPS_PARAM_TENSOR_IN, tensor=c_loc(tb))
        args(3) = clops_arg(name=c_loc(name_c), kind=CLOPS_PARAM_TENSOR_OUT, tensor=c_loc(tc))
        args(4) = clops_arg(name=c_loc(name_beta), kind=CLOPS_PARAM_DOUBLE, d=0)

        create%struct_size = int(c_sizeof(create), c_int32_t)
        create%pool = pool%handle
        status = clops_args_call(api%stream_create, c_loc(create))
        call expect(status == CLOPS_OK, 'stream_create: '//clops_error_message())

        submit%struct_size = int(c_sizeof(submit), c_int32_t)
        submit%op_index = clops_op_index('gemm')
        submit%stream = create%stream
        submit%args = c_loc(args)
        submit%nargs = size(args)
        submit%arg_size = int(c_sizeof(args(1)), c_int32_t)
        status = clops_args_call(api%submit, c_loc(submit))
        call expect(status == CLOPS_OK, 'submit: '//clops_error_message())
        call expect(c_associated(submit%event), 'submit returns an event')

        events(1) = submit%event
        wait%struct_size = int(c_sizeof(wait), c_int32_t)
        wait%count = 1
        wait%events = c_loc(events)
        wait%timeout_ns = -1
        status = clops_args_call(api%event_wait, c_loc(wait))
        call expect(status == CLOPS_OK, 'event_wait: '//clops_error_message())

        query%struct_size = int(c_sizeof(query), c_int32_t)
        query%event = submit%event
        status = clops_args_call(api%event_query, c_loc(query))
        call expect(status == CLOPS_OK .and. query%state == CLOPS_EVENT_COMPLETE .and. &
                    query%status == CLOPS_OK .and. query%progress >= 1, &
                    'the event is complete, status CLOPS_OK, progress 1')
        error = gemm_error(c, matmul(a, b), matmul(abs(a), abs(b)), 0 * c, 1.0_real64, &
                           0.0_real64, k, epsilon(1.0_real64))
        call expect(error < 2, 'a gemm on a stream matches matmul')

        release_event%struct_size = int(c_sizeof(release_event), c_int32_t)
        release_event%event = submit%event
        call expect(clops_args_call(api%event_release, c_loc(release_event)) == CLOPS_OK, &
                    'event_release')
        release_stream%struct_size = int(c_sizeof(release_stream), c_int32_t)
        release_stream%stream = create%stream
        call expect(clops_args_call(api%stream_release, c_loc(release_stream)) == CLOPS_OK, &
                    'stream_release')
        call pass('gemm_on_a_stream', error)
    end subroutine

    ! ---- Registered host memory (ABI 1.4, after buffer_copy) ------------------------------

    ! A, B (a section with a padded leading dimension) and C carved out of one registered
    ! array: C = alpha A B + beta C read from and written into it matches matmul, A and B are
    ! left as they were, and the range is unregistered after (a second unregister finds none).
    subroutine test_gemm_reads_registered_memory(m, n, k)
        integer, intent(in) :: m, n, k
        integer, parameter :: pad = 3
        real(real64), parameter :: alpha = 1.25_real64, beta = -0.5_real64
        real(real64), allocatable, target :: block(:)
        real(real64), allocatable :: before(:), c0(:, :)
        real(real64), pointer :: a(:, :), b_parent(:, :), c(:, :)
        integer :: c_first
        real(real64) :: error
        character(len=:), allocatable :: message
        c_first = m * k + (k + pad) * n + 1
        allocate (block(c_first + m * n - 1))
        call random_number(block)
        block = 2 * block - 1
        before = block
        a(1:m, 1:k) => block(1:m * k)
        b_parent(1:k + pad, 1:n) => block(m * k + 1:c_first - 1)
        c(1:m, 1:n) => block(c_first:)
        c0 = c
        call expect(clops_api_has_host_register(), 'the table has host_register')
        call clops_host_register(pool, c_loc(block), &
                                 size(block, kind=c_int64_t) * c_sizeof(block(1)), status)
        call expect(status == CLOPS_OK, 'host_register: '//clops_error_message())
        call gemm(pool, a, b_parent(2:k + 1, :), c, alpha, beta, status=status)
        call expect(status == CLOPS_OK, 'gemm on registered memory: '//clops_error_message())
        error = gemm_error(c, alpha * matmul(a, b_parent(2:k + 1, :)) + beta * c0, &
                           matmul(abs(a), abs(b_parent(2:k + 1, :))), c0, alpha, beta, k, &
                           epsilon(1.0_real64))
        call expect(error < 2, 'gemm on registered memory matches matmul')
        call expect(maxval(abs(block(:c_first - 1) - before(:c_first - 1))) <= 0, &
                    'gemm leaves A and B in the registered range as they were')
        call clops_host_unregister(pool, c_loc(block), status)
        call expect(status == CLOPS_OK, 'host_unregister: '//clops_error_message())
        call clops_host_unregister(pool, c_loc(block), status)
        message = clops_error_message()
        call expect(status == CLOPS_ERR_NOT_FOUND .and. index(message, "'data'") > 0, &
                    'a second host_unregister is NOT_FOUND, naming data')
        call pass('gemm_reads_registered_memory', error)
    end subroutine

    ! A range overlapping a registered one, and flags other than 0, are refused with messages
    ! that say so; the registration in place is unchanged (it unregisters once, then the whole
    ! array registers again).
    subroutine test_host_register_refusals_name_the_range()
        real(real64), allocatable, target :: block(:)
        type(clops_api), pointer :: api
        type(clops_host_register_args), target :: args
        character(len=:), allocatable :: message
        allocate (block(1000))
        block = 0
        call clops_host_register(pool, c_loc(block(501)), 500 * c_sizeof(block(1)), status)
        call expect(status == CLOPS_OK, 'host_register of the upper half: '//clops_error_message())
        call clops_host_register(pool, c_loc(block), &
                                 size(block, kind=c_int64_t) * c_sizeof(block(1)), status)
        message = clops_error_message()
        print *, '  host_register over a registered range -> '//clops_status_name(status)// &
            ': '//message
        call expect(status == CLOPS_ERR_INVALID_ARGUMENT .and. index(message, 'overlaps') > 0, &
                    'an overlapping range is INVALID_ARGUMENT, saying it overlaps')

        api => clops_get_api()
        args = clops_host_register_args(int(c_sizeof(args), c_int32_t), 1, pool%handle, &
                                        c_loc(block), 100 * c_sizeof(block(1)))
        status = clops_args_call(api%host_register, c_loc(args))
        message = clops_error_message()
        call expect(status == CLOPS_ERR_INVALID_ARGUMENT .and. index(message, "'flags'") > 0, &
                    'flags = 1 is INVALID_ARGUMENT, naming flags')

        call clops_host_unregister(pool, c_loc(block(501)), status)
        call expect(status == CLOPS_OK, 'the upper half is still registered after the refusals')
        call clops_host_register(pool, c_loc(block), &
                                 size(block, kind=c_int64_t) * c_sizeof(block(1)), status)
        call expect(status == CLOPS_OK, 'the whole array registers once the half is not')
        call clops_host_unregister(pool, c_loc(block), status)
        call expect(status == CLOPS_OK, 'host_unregister of the whole array')
        print *, 'host_register_refusals_name_the_range: PASS'
    end subroutine

    ! ---- Buffers on a chosen device (ABI 1.4, after host_unregister) -----------------------

    ! A buffer of n doubles made by buffer_create_on on device 0 lives there (buffer_cl says so,
    ! and device 0 holds one more cl_mem), has the bytes asked for, and gives back exactly what
    ! was uploaded into it; device 99 is NOT_FOUND naming 'device' and returns no buffer.
    subroutine test_buffer_created_on_device_0_round_trips(n)
        integer, intent(in) :: n
        real(real64), allocatable, target :: sent(:), received(:)
        type(clops_api), pointer :: api
        type(clops_buffer_cl_args), target :: located
        type(clops_memory_stats_args), target :: before, after
        procedure(buffer_transfer_fn), pointer :: upload, download
        procedure(buffer_size_fn), pointer :: buffer_bytes
        type(c_ptr) :: buffer, refused
        integer(c_int64_t) :: bytes
        character(len=:), allocatable :: message
        allocate (sent(n), received(n))
        call random_number(sent)
        sent = 2 * sent - 1
        received = 7 ! outside sent's [-1, 1)
        bytes = size(sent, kind=c_int64_t) * c_sizeof(sent(1))
        api => clops_get_api()
        call c_f_procpointer(api%buffer_upload, upload)
        call c_f_procpointer(api%buffer_download, download)
        call c_f_procpointer(api%buffer_size, buffer_bytes)
        call expect(clops_api_has_buffer_create_on(), 'the table has buffer_create_on')

        before = clops_memory_stats_args(int(c_sizeof(before), c_int32_t), 0, pool%handle)
        call expect(clops_args_call(api%memory_stats, c_loc(before)) == CLOPS_OK, &
                    'memory_stats of device 0: '//clops_error_message())
        buffer = clops_buffer_create_on(pool, 0, bytes, status)
        call expect(status == CLOPS_OK .and. c_associated(buffer), &
                    'buffer_create_on device 0: '//clops_error_message())
        after = clops_memory_stats_args(int(c_sizeof(after), c_int32_t), 0, pool%handle)
        call expect(clops_args_call(api%memory_stats, c_loc(after)) == CLOPS_OK, &
                    'memory_stats of device 0 after: '//clops_error_message())
        call expect(after%buffers == before%buffers + 1, 'device 0 holds one more cl_mem')
        located = clops_buffer_cl_args(int(c_sizeof(located), c_int32_t), -1, buffer)
        status = clops_args_call(api%buffer_cl, c_loc(located))
        call expect(status == CLOPS_OK .and. located%device == 0 .and. &
                    c_associated(located%cl_mem), 'buffer_cl: the buffer lives on device 0')
        call expect(buffer_bytes(buffer) == bytes, 'buffer_size is the bytes asked for')

        status = upload(buffer, 0_c_int64_t, c_loc(sent), bytes)
        call expect(status == CLOPS_OK, 'buffer_upload: '//clops_error_message())
        status = download(buffer, 0_c_int64_t, c_loc(received), bytes)
        call expect(status == CLOPS_OK, 'buffer_download: '//clops_error_message())
        call expect(maxval(abs(received - sent)) <= 0, &
                    'the buffer gives back exactly what was uploaded')

        refused = clops_buffer_create_on(pool, 99, bytes, status)
        message = clops_error_message()
        print *, '  buffer_create_on device 99 -> '//clops_status_name(status)//': '//message
        call expect(status == CLOPS_ERR_NOT_FOUND .and. index(message, "'device'") > 0, &
                    'device 99 is NOT_FOUND, naming device')
        call expect(.not. c_associated(refused), 'a refused buffer_create_on returns no buffer')

        call clops_buffer_release(buffer)
        call expect(.not. c_associated(buffer), 'a released buffer is null')
        call clops_buffer_release(buffer) ! null: does nothing
        print *, 'buffer_created_on_device_0_round_trips: PASS ('//text(bytes)//' bytes)'
    end subroutine

    ! A whole column-major array as a tensor: strides {1, size(a, 1)}.
    function column_major(a) result(t)
        real(real64), intent(in), target :: a(:, :)
        type(clops_tensor) :: t
        t%data = c_loc(a)
        t%dtype = CLOPS_F64
        t%rank = 2
        t%shape(1:2) = [size(a, 1), size(a, 2)]
        t%strides(1:2) = [1, size(a, 1)]
    end function

end program test_clops
