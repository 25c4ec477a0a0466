"""Learned generation orders by variational inference (Fox et al. 2026, arXiv 2602.23968): the order networks (:mod:`.net`),
the ``learned`` policy and the training-time posterior (:mod:`.policy`), the ELBO and its gradient
estimators (:mod:`.elbo`), and the trainer (:mod:`.train`)."""

from unmask.order import policy  # noqa: F401  (registers the learned policy)
from unmask.order.net import OrderConfig, OrderNet, load_order_net, save_order_net

__all__ = ["OrderConfig", "OrderNet", "load_order_net", "save_order_net"]
