"""The CPU suite's shared setup.

The generator of the recognizer's input corpus, ``utils/recognizer_forms.py``
(with ``recognizer_forms_terms.py``), writes into ``test/`` and is no part of
the package; ``test_recognize.py`` and ``test_recognize_inputs.py`` import it
(its entries and execution helpers) from ``utils/``, which is put on the path
here.
"""

import os
import sys

_UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "utils")
if _UTILS not in sys.path:
    sys.path.append(_UTILS)
