//! The project as its users get it: the applications under `examples/`,
//! each built and run as its README says (`examples`), and the crates as
//! `cargo publish` packs them, built and run from the packages
//! (`packaged`), and one example measured (`ml_kem_sets`). Above `mqtt`: an example's keys come from the `kem-mqtt`
//! command line the end-to-end steps build (`crate::mqtt::e2e_session`).

pub mod examples;
pub mod ml_kem_sets;
pub mod packaged;
