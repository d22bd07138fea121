"""The ROS 2 layer: the nodes and the parts they share (parameters, messages, spinning).

Importing it imports ``rosidl_generator_py`` (the type support loader of every message) without its code
generator: ``lean_type_support``.
"""
import sys

#: The code generator that ``rosidl_generator_py`` imports beside its type support loader, if it can.
GENERATOR = 'rosidl_generator_py.generate_py_impl'


def lean_type_support():
    """Import ``rosidl_generator_py`` without its code generator; a node only loads message type support.

    The first message a node uses imports ``rosidl_generator_py`` for ``import_type_support``, and its
    package import also loads ``generate_py`` (the IDL parser, lark): about 7 MB and 30 ms of CPU that a
    running node never uses.  The package imports the generator only if it can (it logs the ImportError
    at debug level and goes on); here it cannot.  Afterwards ``rosidl_generator_py.generate_py_impl`` is
    importable again.
    """
    if 'rosidl_generator_py' in sys.modules or GENERATOR in sys.modules:
        return
    sys.modules[GENERATOR] = None   # ``from .generate_py_impl import ...`` raises ImportError
    try:
        import rosidl_generator_py  # noqa: F401
    except ImportError:
        pass   # not a ROS environment: the node's own imports say so
    finally:
        if sys.modules.get(GENERATOR, 0) is None:
            del sys.modules[GENERATOR]


lean_type_support()
