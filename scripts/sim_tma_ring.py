"""Simulation (round 107): the slot bookkeeping of scripts/probe_tma_ring.py's ring, item by item, for every program
of the sweep's fp32 launches of 512 x 262,144 and 128 x 1M (LOOKAHEAD 0). Asserts that no slot is asked for twice
before it is read and that each wait finds the tile it expects. Plain Python, no GPU:

    python scripts/sim_tma_ring.py
"""
SLOTS = 14
PROGRAMS = 132


def replay(tiles_per_item: list) -> None:
    """Replay one program's items (their tile counts) through the ring as the kernel asks for and reads its slots."""
    holds = [None] * SLOTS  # slot -> (item, tile) asked for and not yet read
    for t in range(tiles_per_item[0]):
        holds[t] = (0, t)
    head, issued = 0, tiles_per_item[0]
    for k, n_tiles in enumerate(tiles_per_item):
        next_tiles = tiles_per_item[k + 1] if k + 1 < len(tiles_per_item) else 0
        for t in range(issued, n_tiles):
            slot = (head + t) % SLOTS
            assert holds[slot] is None, ("rest", k, t, slot, holds[slot])
            holds[slot] = (k, t)
        next_head = (head + n_tiles) % SLOTS
        early = min(SLOTS - n_tiles, next_tiles)
        for j in range(early):
            slot = (next_head + j) % SLOTS
            assert holds[slot] is None, ("early", k, j, slot, holds[slot])
            holds[slot] = (k + 1, j)
        for t in range(n_tiles):
            slot = (head + t) % SLOTS
            assert holds[slot] == (k, t), ("wait", k, t, slot, holds[slot])
        for t in range(n_tiles):
            slot = (head + t) % SLOTS
            holds[slot] = None
            if early + t < next_tiles:
                assert (next_head + early + t) % SLOTS == slot, ("refill", k, t)
                holds[slot] = (k + 1, early + t)
        issued, head = min(early + n_tiles, next_tiles), next_head


def main() -> None:
    """Every program of both launches."""
    for name, n_rows, segments in (("512 x 262,144", 512, [13, 13, 13, 13, 12]), ("128 x 1M", 128, [14] * 18 + [4])):
        n_items = n_rows * len(segments)
        for program in range(PROGRAMS):
            replay([segments[item % len(segments)] for item in range(program, n_items, PROGRAMS)])
        print(f"{name}: every program's ring replays clean")


if __name__ == "__main__":
    main()
