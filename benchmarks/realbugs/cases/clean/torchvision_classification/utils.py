import torch


class ExponentialMovingAverage(torch.optim.swa_utils.AveragedModel):
    """Maintains moving averages of model parameters using an exponential decay.
    ``ema_avg = decay * avg_model_param + (1 - decay) * model_param``
    """

    def __init__(self, model, decay, device="cpu"):
        def ema_avg(avg_model_param, model_param, num_averaged):
            return decay * avg_model_param + (1 - decay) * model_param

        super().__init__(model, device, ema_avg, use_buffers=True)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.inference_mode():
        maxk = max(topk)
        batch_size = target.size(0)
        if target.ndim == 2:
            target = target.max(dim=1)[1]

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target[None])

        res = []
        for k in topk:
            correct_k = correct[:k].flatten().sum(dtype=torch.float32)
            res.append(correct_k * (100.0 / batch_size))
        return res


def get_optimizer_params(optimizer):
    """Generator to iterate over all parameters in the optimizer param_groups."""

    for group in optimizer.param_groups:
        for p in group["params"]:
            yield p


def set_weight_decay(model, weight_decay, norm_weight_decay=None):
    norm_classes = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm, torch.nn.GroupNorm)
    params = {"other": [], "norm": []}

    def _add_params(module):
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if norm_weight_decay is not None and isinstance(module, norm_classes):
                params["norm"].append(p)
            else:
                params["other"].append(p)
        for child in module.children():
            _add_params(child)

    _add_params(model)
    param_groups = []
    for key, wd in (("other", weight_decay), ("norm", norm_weight_decay)):
        if len(params[key]) > 0:
            param_groups.append({"params": params[key], "weight_decay": wd})
    return param_groups
