"""The candidate families, one module per kind of edit; candidates.py maps finding codes to them."""
from .detach import detach_source, detach_carried, detach_copy_sources
from .accumulate import accumulate_detached
from .inplace import out_of_place
from .manual_update import no_grad_update
from .zero_grad import zero_grad_before_backward
from .smooth import smooth_cut
from .register import register_parameter, register_container, layer_to_init, add_to_optimizer
from .backward_twice import reuse_graph
from .leaf import leaf_parameter
from .reduce import reduce_loss
from .grad_mode import enable_grad
from .history import keep_history
from .checkpoint import checkpoint_non_reentrant
from .param_data import copy_into_param
from .carried import cut_carried_state, cut_growing_state
from .records import detach_records

__all__ = [
    "detach_source",
    "detach_carried",
    "detach_copy_sources",
    "accumulate_detached",
    "out_of_place",
    "no_grad_update",
    "zero_grad_before_backward",
    "smooth_cut",
    "register_parameter",
    "register_container",
    "layer_to_init",
    "add_to_optimizer",
    "reuse_graph",
    "leaf_parameter",
    "reduce_loss",
    "enable_grad",
    "keep_history",
    "checkpoint_non_reentrant",
    "copy_into_param",
    "cut_carried_state",
    "cut_growing_state",
    "detach_records",
]
