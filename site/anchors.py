"""The anchor JupyterLab gives a heading, from the text MyST sees: each space becomes '-'."""


def jupyterlab_anchor(title: str) -> str:
    return title.replace(" ", "-")
