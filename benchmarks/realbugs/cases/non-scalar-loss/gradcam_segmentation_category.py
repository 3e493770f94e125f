import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ActivationsAndGradients:
    def __init__(self, model, target_layer):
        self.model = model
        self.gradients = []
        self.activations = []
        target_layer.register_forward_hook(self.save_activation)
        target_layer.register_full_backward_hook(self.save_gradient)

    def save_activation(self, module, input, output):
        self.activations.append(output.cpu().detach())

    def save_gradient(self, module, grad_input, grad_output):
        self.gradients = [grad_output[0].cpu().detach()] + self.gradients

    def __call__(self, x):
        self.gradients = []
        self.activations = []
        return self.model(x)


class GradCAM:
    def __init__(self, model, target_layer):
        self.model = model.eval()
        self.target_layer = target_layer
        self.activations_and_grads = ActivationsAndGradients(self.model, target_layer)

    def get_loss(self, output, target_category):
        loss = 0
        for i in range(len(target_category)):
            loss = loss + output[i, target_category[i]]
        return loss

    def __call__(self, input_tensor, target_category=None):
        output = self.activations_and_grads(input_tensor)
        if type(target_category) is int:
            target_category = [target_category] * input_tensor.size(0)
        if target_category is None:
            target_category = np.argmax(output.cpu().data.numpy(), axis=-1)
        self.model.zero_grad()
        loss = self.get_loss(output, target_category)
        loss.backward(retain_graph=True)
        activations = self.activations_and_grads.activations[-1].numpy()
        grads = self.activations_and_grads.gradients[-1].numpy()
        weights = np.mean(grads, axis=(2, 3))[:, :, None, None]
        cam = np.maximum((weights * activations).sum(axis=1), 0)
        return cam


class AttU_Net(nn.Module):
    def __init__(self, img_ch=3, output_ch=2):
        super().__init__()
        self.Conv1 = nn.Sequential(nn.Conv2d(img_ch, 8, 3, padding=1), nn.ReLU())
        self.Conv2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.Up2 = nn.Sequential(nn.Conv2d(16, 8, 3, padding=1), nn.ReLU())
        self.Conv_1x1 = nn.Conv2d(16, output_ch, 1)

    def forward(self, x):
        x1 = self.Conv1(x)
        x2 = self.Conv2(F.max_pool2d(x1, 2))
        d2 = F.interpolate(self.Up2(x2), scale_factor=2)
        return self.Conv_1x1(torch.cat([x1, d2], dim=1))


model1 = AttU_Net()
cam = GradCAM(model=model1, target_layer=model1.Up2)
input_tensor = torch.randn(1, 3, 16, 16)
grayscale_cam = cam(input_tensor=input_tensor, target_category=1)
