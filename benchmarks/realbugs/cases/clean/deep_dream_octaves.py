import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

mean = np.array([0.485, 0.456, 0.406])
std = np.array([0.229, 0.224, 0.225])


def zoom(array, size):
    with torch.no_grad():
        out = F.interpolate(torch.from_numpy(array), size=size, mode="bilinear", align_corners=False)
    return out.numpy()


def preprocess(image):
    image = (image - mean) / std
    return torch.from_numpy(image.transpose(2, 0, 1).astype(np.float32))


def deprocess(image_np):
    image_np = image_np.squeeze().transpose(1, 2, 0)
    image_np = image_np * std.reshape((1, 1, 3)) + mean.reshape((1, 1, 3))
    return np.clip(image_np, 0.0, 1.0)


def clip(image_tensor):
    for c in range(3):
        m, s = mean[c], std[c]
        image_tensor[0, c] = torch.clamp(image_tensor[0, c], -m / s, (1 - m) / s)
    return image_tensor


def dream(image, model, iterations, lr):
    """ Updates the image to maximize outputs for n iterations """
    Tensor = torch.FloatTensor
    image = Variable(Tensor(image), requires_grad=True)
    for i in range(iterations):
        model.zero_grad()
        out = model(image)
        loss = out.norm()
        loss.backward()
        avg_grad = np.abs(image.grad.data.cpu().numpy()).mean()
        norm_lr = lr / avg_grad
        image.data += norm_lr * image.grad.data
        image.data = clip(image.data)
        image.grad.data.zero_()
    return image.cpu().data.numpy()


def deep_dream(image, model, iterations, lr, octave_scale, num_octaves):
    """ Main deep dream method """
    image = preprocess(image).unsqueeze(0).cpu().data.numpy()

    octaves = [image]
    for _ in range(num_octaves - 1):
        h, w = octaves[-1].shape[-2:]
        octaves.append(zoom(octaves[-1], (int(h / octave_scale), int(w / octave_scale))))

    detail = np.zeros_like(octaves[-1])
    for octave, octave_base in enumerate(octaves[::-1]):
        if octave > 0:
            detail = zoom(detail, octave_base.shape[-2:])
        input_image = octave_base + detail
        dreamed_image = dream(input_image, model, iterations, lr)
        detail = dreamed_image - octave_base

    return deprocess(dreamed_image)


if __name__ == "__main__":
    torch.manual_seed(0)
    np.random.seed(0)
    at_layer = 4
    image = np.random.rand(24, 24, 3)

    features = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
    )
    network = nn.Sequential(features, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    layers = list(network[0].children())
    model = nn.Sequential(*layers[: (at_layer + 1)])

    dreamed_image = deep_dream(image, model, iterations=5, lr=0.01, octave_scale=1.4, num_octaves=3)
    print(dreamed_image.shape, float(dreamed_image.mean()))
