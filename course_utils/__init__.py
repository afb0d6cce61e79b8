"""Transformer Math: the tested helpers behind the course notebooks.

One module per idea; import the one you need (``from course_utils import softmax``).
Importing the package itself is cheap: torch is loaded only by the modules that use it.
"""

__version__ = "0.1.0"
