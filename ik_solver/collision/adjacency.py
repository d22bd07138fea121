"""Adjacent links, as MoveIt Setup Assistant defines them: joined by a joint, looking through links without geometry.

Two links are adjacent when a joint connects them, or when the only links
between them carry no collision geometry (a flange or tool frame between two
bodies).  Adjacent links touch by design, so their pair is never checked.
"""


def adjacent_pairs(robot, geometry_links):
    """Set of frozenset({a, b}) of adjacent links among ``geometry_links`` of the urdf_parser_py ``robot``."""
    neighbours = {}
    for joint in robot.joints:
        neighbours.setdefault(joint.parent, set()).add(joint.child)
        neighbours.setdefault(joint.child, set()).add(joint.parent)
    geometry_links = set(geometry_links)
    pairs = set()
    for start in geometry_links:
        seen, frontier = {start}, [start]
        while frontier:
            link = frontier.pop()
            for other in neighbours.get(link, ()):
                if other in seen:
                    continue
                seen.add(other)
                if other in geometry_links:
                    pairs.add(frozenset((start, other)))
                else:
                    frontier.append(other)
    return pairs
