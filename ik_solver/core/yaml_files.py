"""Reading a YAML configuration file, with a clear error whichever way that fails.

The joint limits (motion) and the collision scene both read a YAML file given
as a parameter; they share this reader, which lives in the core because the
core and motion layers may not import the collision package.  Each caller keeps
its own error type and wording, so its messages name the parameter it reads.
"""
import yaml


def read_yaml(path, error, unreadable, invalid):
    """Return the document of the UTF-8 YAML file ``path`` (``yaml.safe_load``).

    ``error`` is raised, without the OSError or YAMLError as context, with the message
    ``unreadable`` where the file cannot be opened or read and ``invalid`` where it is
    not valid YAML; both are ``str.format`` templates of ``path`` and ``exc`` (the error).
    """
    try:
        with open(path, encoding='utf-8') as stream:
            return yaml.safe_load(stream)
    except OSError as exc:
        raise error(unreadable.format(path=path, exc=exc)) from None
    except yaml.YAMLError as exc:
        raise error(invalid.format(path=path, exc=exc)) from None
