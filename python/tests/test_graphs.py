"""Kernel nodes of CUDA graphs in the DataFrame: a real recording (fixtures/recorded/
graph_capture.jsonl, see its README) of five graph launches of three kernel nodes."""
import pytest

pytest.importorskip("pandas")
from rangeprof import frame  # noqa: E402 (needs pandas)


def test_each_kernel_node_of_each_graph_launch_is_its_own_launch(recorded):
    df = frame.load(recorded("graph_capture.jsonl"))
    nodes = df[df["Graph"].notna()]
    assert set(nodes["Workload"]) == {"kernel"}
    # 5 graph launches x 3 nodes, each its own launch although they share cuGraphLaunch's index.
    assert nodes.groupby(["Launch"]).ngroups == 15
    assert sorted(nodes["GraphNode"].unique()) == [0, 1, 2]
    assert set(nodes["Annotation"]) == {"g"}
