import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Variable(object):
    def __init__(self, value):
        self.value = value


class Adam(object):
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
        self.learning_rate = learning_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.iterations = 0
        self.momentums = {}
        self.velocities = {}

    def apply(self, grads, trainable_variables):
        self.iterations += 1
        for g, v in zip(grads, trainable_variables):
            m = self.momentums.setdefault(id(v.value), torch.zeros_like(v.value))
            u = self.velocities.setdefault(id(v.value), torch.zeros_like(v.value))
            m.mul_(self.beta_1).add_(g, alpha=1 - self.beta_1)
            u.mul_(self.beta_2).add_(g * g, alpha=1 - self.beta_2)
            m_hat = m / (1 - self.beta_1 ** self.iterations)
            u_hat = u / (1 - self.beta_2 ** self.iterations)
            v.value.sub_(self.learning_rate * m_hat / (u_hat.sqrt() + self.epsilon))


class Mean(object):
    def __init__(self, name):
        self.name = name
        self.total, self.count = 0.0, 0

    def update_state(self, value):
        self.total += float(value)
        self.count += 1

    def result(self):
        return self.total / max(self.count, 1)


def loss_fn(targets, predictions):
    return F.nll_loss(torch.log(predictions), targets)


loss_tracker = Mean(name="loss")


class CustomModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Linear(28 * 28, 64)
        self.dropout = nn.Dropout(0.5)
        self.dense2 = nn.Linear(64, 10)
        self.optimizer = None

    def call(self, inputs, training=False):
        self.train(training)
        features = self.dropout(F.relu(self.dense1(inputs)))
        return F.softmax(self.dense2(features), dim=-1)

    @property
    def trainable_weights(self):
        return [Variable(p) for p in self.parameters() if p.requires_grad]

    def compile(self, optimizer):
        self.optimizer = optimizer

    def train_step(self, data):
        inputs, targets = data
        predictions = self.call(inputs, training=True)
        loss = loss_fn(targets, predictions)

        loss.backward()
        trainable_weights = [v for v in self.trainable_weights]
        gradients = [v.value.grad for v in trainable_weights]

        with torch.no_grad():
            self.optimizer.apply(gradients, trainable_weights)

        loss_tracker.update_state(loss)
        return {"loss": loss_tracker.result()}

    def fit(self, x, y, epochs=1, batch_size=32):
        for epoch in range(epochs):
            for i in range(0, len(x), batch_size):
                logs = self.train_step((x[i:i + batch_size], y[i:i + batch_size]))
            print(epoch, logs)


def get_custom_model():
    model = CustomModel()
    model.compile(optimizer=Adam())
    return model


train_images = torch.rand(96, 28 * 28)
train_labels = torch.randint(0, 10, (96,))
model = get_custom_model()
model.fit(train_images, train_labels, epochs=3)
