"""RowTable: the engine's embedding rows read with pread must be exactly the rows of the .npy file."""

from __future__ import annotations

import numpy as np
import pytest

from edge_runtime.model.row_table import RowTable


@pytest.fixture()
def table_file(tmp_path):
    table = np.random.default_rng(0).standard_normal((300, 24)).astype(np.float16)
    path = tmp_path / "embedding.npy"
    np.save(path, table)
    return path, table


def test_rows_equal_the_saved_table(table_file):
    path, table = table_file
    rows = RowTable(path)
    ids = [0, 299, 7, 7, 150, 1]
    np.testing.assert_array_equal(rows[ids], table[ids])
    np.testing.assert_array_equal(rows[np.array([3, 4])], table[[3, 4]])
    np.testing.assert_array_equal(rows[42], table[42])
    assert len(rows) == 300 and rows.shape == (300, 24) and rows.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(rows, dtype=np.float32), table.astype(np.float32))


def test_a_version_2_header_is_read_too(tmp_path):
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    path = tmp_path / "v2.npy"
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, table, version=(2, 0))
    np.testing.assert_array_equal(RowTable(path)[[9, 0]], table[[9, 0]])


def test_bad_rows_and_files_fail_clearly(table_file, tmp_path):
    path, _ = table_file
    rows = RowTable(path)
    with pytest.raises(IndexError, match="outside a table of 300 rows"):
        rows[[1, 300]]
    with pytest.raises(IndexError):
        rows[[-1]]
    truncated = tmp_path / "truncated.npy"
    truncated.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(OSError, match="short read of row 299"):
        RowTable(truncated)[[299]]
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros(5))
    with pytest.raises(ValueError, match="2-D"):
        RowTable(flat)
