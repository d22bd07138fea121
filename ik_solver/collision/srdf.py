"""MoveIt SRDF collision entries: read the pairs a robot's SRDF disables, and write them.

Only the collision part of the SRDF matters here: <disable_collisions>,
<disable_default_collisions> (a link checked against nothing unless an
<enable_collisions> names the pair) and <enable_collisions>.  Groups, states
and end effectors are ignored.  Every link named must exist in the URDF: a
typo would silently leave a pair checked or unchecked, so it is an error.
"""
from dataclasses import dataclass, field
import os
import xml.etree.ElementTree as ET
from xml.sax.saxutils import quoteattr

from ..core.exceptions import CollisionError


@dataclass
class Srdf:
    """Collision entries of an SRDF: disabled pairs (a, b, reason), default-disabled links, enabled pairs."""

    robot: str = ''
    disabled: list = field(default_factory=list)
    default_disabled: list = field(default_factory=list)
    enabled: list = field(default_factory=list)
    source: str = 'SRDF'

    def validate(self, links):
        """Raise CollisionError if an entry names a link that is not in ``links``."""
        named = {link for a, b, _ in self.disabled for link in (a, b)}
        named |= set(self.default_disabled) | {link for pair in self.enabled for link in pair}
        unknown = sorted(named - set(links))
        if unknown:
            raise CollisionError(f'{self.source} names links that are not in the robot: {", ".join(unknown)}')

    def is_disabled(self, a, b):
        """Whether the SRDF turns off collision checking between links ``a`` and ``b``."""
        pair = frozenset((a, b))
        if any(frozenset(p) == pair for p in self.enabled):
            return False
        if a in self.default_disabled or b in self.default_disabled:
            return True
        return any(frozenset((x, y)) == pair for x, y, _ in self.disabled)


def load_srdf(source):
    """Parse SRDF XML text, or the SRDF file ``source``; CollisionError if it cannot be read or is malformed."""
    if '<' in source:
        text, label = source, 'SRDF'
    else:
        label = f'SRDF file {source}'
        if not os.path.isfile(source):
            raise CollisionError(f'{label} not found')
        with open(source, encoding='utf-8') as f:
            text = f.read()
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise CollisionError(f'{label} is malformed XML: {exc}') from None
    if root.tag != 'robot':
        raise CollisionError(f'{label}: root element is <{root.tag}>, expected <robot>')
    srdf = Srdf(root.get('name', ''), source=label)
    for element in root.findall('disable_collisions'):
        srdf.disabled.append((*_links(element, label, 'link1', 'link2'), element.get('reason', '')))
    for element in root.findall('disable_default_collisions'):
        srdf.default_disabled.append(_links(element, label, 'link')[0])
    for element in root.findall('enable_collisions'):
        srdf.enabled.append(_links(element, label, 'link1', 'link2'))
    return srdf


def _links(element, label, *attributes):
    values = tuple(element.get(a) for a in attributes)
    if not all(values):
        raise CollisionError(f'{label}: <{element.tag}> needs the attributes {", ".join(attributes)}, '
                             f'got {dict(element.attrib)}')
    return values


def srdf_text(robot, entries, comment=''):
    """SRDF XML disabling the pairs ``entries`` [(link1, link2, reason)], with an optional comment."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    if comment:
        lines.append(f'<!-- {comment.replace("--", "- -")} -->')
    lines.append(f'<robot name={quoteattr(robot)}>')
    for a, b, reason in entries:
        lines.append(f'  <disable_collisions link1={quoteattr(a)} link2={quoteattr(b)} reason={quoteattr(reason)}/>')
    lines.append('</robot>')
    return '\n'.join(lines) + '\n'
