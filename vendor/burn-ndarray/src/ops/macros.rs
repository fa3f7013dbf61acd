macro_rules! keepdim {
    (
        $dim:expr,
        $self:expr,
        mean
    ) => {{
        // Get shape first (via reference), then pass ownership to avoid clone
        let mut shape = $self.shape().into_shape();
        shape[$dim] = 1;
        let tensor: SharedArray<E> = mean_dim($self, $dim);
        NdArrayOps::reshape(tensor, shape)
    }};
    (
        $dim:expr,
        $self:expr,
        sum
    ) => {{
        // Get shape first (via reference), then pass ownership to avoid clone
        let mut shape = $self.shape().into_shape();
        shape[$dim] = 1;
        let tensor: SharedArray<E> = sum_dim($self, $dim);
        NdArrayOps::reshape(tensor, shape)
    }};
    (
        $dim:expr,
        $self:expr,
        prod
    ) => {{
        // Get shape first (via reference), then pass ownership to avoid clone
        let mut shape = $self.shape().into_shape();
        shape[$dim] = 1;
        let tensor: SharedArray<E> = prod_dim($self, $dim);
        NdArrayOps::reshape(tensor, shape)
    }};
}

use burn_backend::ElementConversion;
pub(crate) use keepdim;
use ndarray::{Axis, Zip};

use crate::{SharedArray, element::NdArrayElement};

pub(crate) fn mean_dim<E: NdArrayElement>(tensor: SharedArray<E>, dim: usize) -> SharedArray<E> {
    tensor.mean_axis(Axis(dim)).unwrap().into_shared()
}

pub(crate) fn sum_dim<E: NdArrayElement>(tensor: SharedArray<E>, dim: usize) -> SharedArray<E> {
    // privrl: a matrix in standard layout is summed over its slices, in the order and with the
    // operations `sum_axis` uses, without its per-row cost on dynamic dimensions (PRIVRL.md).
    if let Some(sum) = sum_matrix_axis(&tensor, dim) {
        return sum;
    }
    tensor.sum_axis(Axis(dim)).into_shared()
}

/// privrl: `sum_axis` of a non-empty 2-D array whose strides are exactly the standard ones,
/// with the same operations in the same order; `None` for any other array.
///
/// For such an array ndarray's `min_stride_axis` is axis 1 (the later axis wins a tie, as for
/// `[n, 1]` with strides `[1, 1]`), so `sum_axis` takes one of its two branches: along axis 1
/// it sums each row with `ArrayView1::sum` (for a contiguous lane, the eight-way unrolled fold
/// over its slice: the same call here); along axis 0 it starts from zeros and adds the rows one
/// after another (`res = res + &row`, i.e. `res[j] = res[j] + row[j]`): the same additions in
/// one loop over the buffer. The result is the same one-dimensional standard-layout array.
fn sum_matrix_axis<E: NdArrayElement>(
    tensor: &SharedArray<E>,
    dim: usize,
) -> Option<SharedArray<E>> {
    let &[rows, columns] = tensor.shape() else {
        return None;
    };
    if rows == 0 || columns == 0 || dim > 1 || tensor.strides() != [columns as isize, 1] {
        return None;
    }
    let data = tensor.as_slice_memory_order()?;
    let rows_of = || data.chunks_exact(columns);
    let sums: alloc::vec::Vec<E> = if dim == 1 {
        rows_of()
            .map(|row| ndarray::ArrayView1::from(row).sum())
            .collect()
    } else {
        let mut sums = alloc::vec![E::zero(); columns];
        for row in rows_of() {
            for (sum, &x) in sums.iter_mut().zip(row) {
                *sum = *sum + x;
            }
        }
        sums
    };
    Some(ndarray::Array1::from(sums).into_dyn().into_shared())
}

pub(crate) fn prod_dim<E: NdArrayElement>(tensor: SharedArray<E>, dim: usize) -> SharedArray<E> {
    tensor
        .fold_axis(Axis(dim), 1.elem::<E>(), |acc, &x| acc.mul(x.elem()))
        .into_shared()
}

/// Generic cumulative operation function with closure-based operation.
pub(crate) fn cumulative_with_op<E, F>(tensor: SharedArray<E>, dim: usize, op: F) -> SharedArray<E>
where
    E: NdArrayElement,
    F: Fn(&mut E, &E),
{
    let axis = Axis(dim);
    let shape = tensor.shape().to_vec();
    // Use into_owned() instead of to_owned() - only copies if shared, avoids copy if unique
    let mut result = tensor.into_owned();
    let dim_size = shape[dim];

    for i in 1..dim_size {
        let prev = result.index_axis(axis, i - 1).to_owned();
        let mut current = result.index_axis_mut(axis, i);
        Zip::from(&mut current).and(&prev).for_each(&op);
    }

    result.into_shared()
}

// Define all cumulative operation functions using the generic function
pub(crate) fn cumsum_dim<E: NdArrayElement>(tensor: SharedArray<E>, dim: usize) -> SharedArray<E> {
    cumulative_with_op(tensor, dim, |c, &p| *c = c.add(p.elem()))
}

pub(crate) fn cumprod_dim<E: NdArrayElement>(tensor: SharedArray<E>, dim: usize) -> SharedArray<E> {
    cumulative_with_op(tensor, dim, |c, &p| *c = c.mul(p.elem()))
}

pub(crate) fn cummin_dim<E: NdArrayElement + core::cmp::PartialOrd<E>>(
    tensor: SharedArray<E>,
    dim: usize,
) -> SharedArray<E> {
    cumulative_with_op(tensor, dim, |c, &p| {
        if p < *c {
            *c = p;
        }
    })
}

pub(crate) fn cummax_dim<E: NdArrayElement + core::cmp::PartialOrd<E>>(
    tensor: SharedArray<E>,
    dim: usize,
) -> SharedArray<E> {
    cumulative_with_op(tensor, dim, |c, &p| {
        if p > *c {
            *c = p;
        }
    })
}
