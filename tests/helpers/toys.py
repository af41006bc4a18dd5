"""A toy unit for the fit loop's tests: linear regression over rows of 4 features."""

import torch


class Toy(torch.nn.Module):
    """Linear regression over rows of 4 features; its stats count the batch's 8 rows."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Linear(4, 1)

    def forward(self, batch):
        loss = ((self.w(batch["x"]) - batch["y"]) ** 2).mean()
        return loss, {"loss": (float(loss.detach()) * 8, 8)}
