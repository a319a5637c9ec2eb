"""The frozen record base every dataclass-like type uses."""

import unittest

import support  # noqa: F401  (import path)

from infracalc import record
from infracalc.record import Record


class Point(Record):
    x: int
    y: int = 3


class Other(Record):
    x: int
    y: int = 3


class Records(unittest.TestCase):
    def test_construction(self):
        self.assertEqual((Point(1).x, Point(1).y), (1, 3))
        self.assertEqual(Point(1, 2), Point(x=1, y=2))
        self.assertEqual(Point(1, y=4).y, 4)
        for bad in (lambda: Point(), lambda: Point(1, x=2), lambda: Point(1, z=2), lambda: Point(1, 2, 3)):
            with self.assertRaises(TypeError):
                bad()

    def test_frozen_equality_and_hash(self):
        p = Point(1)
        with self.assertRaises(AttributeError):
            p.x = 5
        self.assertEqual(hash(p), hash(Point(1, 3)))
        self.assertNotEqual(p, Other(1))          # same values, different type
        self.assertEqual(len({Point(1), Point(1), Point(2)}), 2)
        self.assertEqual(p.replace(y=7), Point(1, 7))
        self.assertEqual(p, Point(1))             # replace leaves the original alone

    def test_replace_after_hashing(self):
        # replace copies the instance dict: the cached hash of the original must not come along
        p = Point(1)
        hash(p)
        q = p.replace(y=4)
        self.assertEqual((q.x, q.y), (1, 4))
        self.assertEqual(hash(q), hash(Point(1, 4)))
        self.assertNotEqual(q, p)
        self.assertEqual(p.replace(), p)
        with self.assertRaises(TypeError):
            p.replace(z=1)

    def test_replace_runs_the_check(self):
        class Positive(Record):
            x: int

            def _check(self):
                if self.x <= 0:
                    raise ValueError("x must be positive")
                self.__dict__["_double"] = 2 * self.x   # a private cache beside the fields

        p = Positive(2)
        self.assertEqual(p.replace(x=5)._double, 10)   # recomputed, not copied
        with self.assertRaises(ValueError):
            p.replace(x=0)

    def test_hot_class_compiles_its_constructor_with_the_same_behaviour(self):
        class Hot(Record):
            _hot = True
            a: int
            b: str = "x"
            c: tuple = ()

        class Wider(Hot):   # a hot class's subclass keeps the generic constructor (its own fields)
            d: int = 4

        generic = Hot.__init__
        built = [Hot(i, c=(i,)) for i in range(record.HOT_AFTER)]
        self.assertIsNot(Hot.__init__, generic)   # swapped after HOT_AFTER constructions
        for made in (Hot(7, c=(7,)), Hot(a=7, c=(7,)), Hot(7, "x", (7,))):
            self.assertEqual(made, built[7])
        self.assertEqual(Hot(1).b, "x")
        for bad in (lambda: Hot(), lambda: Hot(1, a=2), lambda: Hot(1, z=2), lambda: Hot(1, "y", (), 3)):
            with self.assertRaises(TypeError):
                bad()
        w = Wider(1, d=9)
        self.assertEqual((w.a, w.b, w.c, w.d), (1, "x", (), 9))
        self.assertEqual(Wider(2).d, 4)

    def test_a_check_runs_on_every_construction_path(self):
        # construction skips the call only for a class that keeps Record's empty _check; one that
        # defines it (or inherits it) is checked by the generic and the compiled constructor and by
        # replace
        class Checked(Record):
            _hot = True
            x: int

            def _check(self):
                if self.x < 0:
                    raise ValueError("x must be >= 0")

        class Inherits(Checked):
            y: int = 0

        self.assertEqual((Point._checked, Checked._checked, Inherits._checked), (False, True, True))
        for _ in range(record.HOT_AFTER + 1):   # past the switch to the compiled constructor
            Checked(1)
        for bad in (lambda: Checked(-1), lambda: Checked(x=-1), lambda: Checked(1).replace(x=-1),
                    lambda: Inherits(-1)):
            with self.assertRaises(ValueError):
                bad()


if __name__ == "__main__":
    unittest.main()
