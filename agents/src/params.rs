//! One home for parameter paths: a module's float parameters visited (or mapped) with their
//! dotted path in the module tree (`layers.0.weight`, `head.bias`), the names that gradient
//! records, layouts, safetensors files and attacks all use. The path comes from Burn's module
//! tree (the field names the `Module` derive reports), never from a string formatted by hand,
//! so renaming a field renames its parameters everywhere at once.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;

/// Visits a module's float parameters with their paths ([`visit_params`]).
pub trait ParamVisitor<B: Backend> {
    /// One parameter, at `path` (e.g. `layers.0.weight`).
    fn visit<const D: usize>(&mut self, path: &str, param: &Param<Tensor<B, D>>);
}

/// Maps a module's float parameters with their paths ([`map_params`]).
pub trait ParamMapper<B: Backend> {
    /// One parameter, at `path`; returns its replacement.
    fn map<const D: usize>(
        &mut self,
        path: &str,
        param: Param<Tensor<B, D>>,
    ) -> Param<Tensor<B, D>>;
}

/// Calls `visitor` on every float parameter of `module`, in Burn's visiting order (the order
/// of a [`GradientRecord`](crate::GradientRecord) and of a flat gradient), with its path.
pub fn visit_params<B: Backend, M: Module<B>>(module: &M, visitor: &mut impl ParamVisitor<B>) {
    module.visit(&mut Paths {
        path: Vec::new(),
        inner: visitor,
    });
}

/// `module` with every float parameter replaced by `mapper`'s result, given its path.
pub fn map_params<B: Backend, M: Module<B>>(module: M, mapper: &mut impl ParamMapper<B>) -> M {
    module.map(&mut Paths {
        path: Vec::new(),
        inner: mapper,
    })
}

/// The path of every float parameter of `module`, in visiting order.
pub fn param_paths<B: Backend, M: Module<B>>(module: &M) -> Vec<String> {
    struct Names(Vec<String>);
    impl<B: Backend> ParamVisitor<B> for Names {
        fn visit<const D: usize>(&mut self, path: &str, _: &Param<Tensor<B, D>>) {
            self.0.push(path.to_string());
        }
    }
    let mut names = Names(Vec::new());
    visit_params(module, &mut names);
    names.0
}

/// Burn's visitor and mapper with the path kept: the one place a path is joined.
struct Paths<'a, V> {
    path: Vec<String>,
    inner: &'a mut V,
}

impl<V> Paths<'_, V> {
    fn joined(&self) -> String {
        self.path.join(".")
    }
}

impl<B: Backend, V: ParamVisitor<B>> ModuleVisitor<B> for Paths<'_, V> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let path = self.joined();
        self.inner.visit(&path, param);
    }
}

impl<B: Backend, V: ParamMapper<B>> ModuleMapper<B> for Paths<'_, V> {
    fn enter_module(&mut self, name: &str, _container_type: &str) {
        self.path.push(name.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let path = self.joined();
        self.inner.map(&path, param)
    }
}
