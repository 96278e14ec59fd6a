"""The built component, run case by case in the real host (`toolhost test`)."""

import unittest

from toolhost.testing import run_cases


class BuiltComponent(unittest.TestCase):
    def test_it_passes_the_cases_in_the_real_host(self):
        report = run_cases("{name}.wasm", "tests/cases.json")
        self.assertEqual(report.failed, [], report.text)


if __name__ == "__main__":
    unittest.main()
