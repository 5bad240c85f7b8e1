"""One host name in every output: the Slurm node name under Slurm, else the hostname."""

from perfprobe.engine.model import host_name
from perfprobe.render.html_page import host_items


def test_slurm_node_name_wins_everywhere_the_html_page_too():
    host = {"hostname": "gpu017.cluster", "slurm_node": "gpu017"}
    assert host_name(host) == "gpu017"
    assert ("host", "gpu017") in host_items(host)
    assert host_name({"hostname": "box"}) == "box" and host_name({}) is None
