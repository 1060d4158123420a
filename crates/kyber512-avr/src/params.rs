//! ML-KEM-512 / Kyber512 parameters (FIPS 203 §8, Table 2). Every
//! parameter set of this crate has a `params` module of this shape.

crate::parameter_set::parameter_set!(k: 2, eta1: 3, du: 10, dv: 4);
