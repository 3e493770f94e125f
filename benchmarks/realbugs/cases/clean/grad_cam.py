import torch
import torch.nn as nn
import torch.nn.functional as F


class ActivationsAndGradients:
    """Class for extracting activations and registering gradients from targeted intermediate layers."""

    def __init__(self, model, target_layers):
        self.model = model
        self.gradients = []
        self.activations = []
        self.handles = []
        for target_layer in target_layers:
            self.handles.append(target_layer.register_forward_hook(self.save_activation))
            self.handles.append(target_layer.register_forward_hook(self.save_gradient))

    def save_activation(self, module, input, output):
        self.activations.append(output.cpu().detach())

    def save_gradient(self, module, input, output):
        if not hasattr(output, "requires_grad") or not output.requires_grad:
            return

        def _store_grad(grad):
            self.gradients = [grad.cpu().detach()] + self.gradients

        output.register_hook(_store_grad)

    def __call__(self, x):
        self.gradients = []
        self.activations = []
        return self.model(x)

    def release(self):
        for handle in self.handles:
            handle.remove()


class ClassifierOutputTarget:
    def __init__(self, category):
        self.category = category

    def __call__(self, model_output):
        return model_output[self.category]


class GradCAM:
    def __init__(self, model, target_layers):
        self.model = model.eval()
        self.target_layers = target_layers
        self.activations_and_grads = ActivationsAndGradients(self.model, target_layers)

    def __call__(self, input_tensor, targets=None):
        outputs = self.activations_and_grads(input_tensor)
        if targets is None:
            target_categories = outputs.argmax(dim=-1).tolist()
            targets = [ClassifierOutputTarget(category) for category in target_categories]
        self.model.zero_grad()
        loss = sum([target(output) for target, output in zip(targets, outputs)])
        loss.backward(retain_graph=True)
        activations = self.activations_and_grads.activations[0]
        grads = self.activations_and_grads.gradients[0]
        weights = grads.mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * activations).sum(dim=1))
        cam = cam - cam.amin(dim=(1, 2), keepdim=True)
        cam = cam / (cam.amax(dim=(1, 2), keepdim=True) + 1e-7)
        return cam

    def __del__(self):
        self.activations_and_grads.release()


torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5),
)
target_layers = [model[2]]
input_tensor = torch.rand(2, 3, 16, 16)
cam = GradCAM(model=model, target_layers=target_layers)
grayscale_cam = cam(input_tensor=input_tensor, targets=[ClassifierOutputTarget(1), ClassifierOutputTarget(3)])
print(grayscale_cam.shape, float(grayscale_cam.max()))
del cam
