//! The model's parameters live with the records they are stored in (`schedlab_model::sim_params`).

pub use schedlab_model::sim_params::*;
