from scheduler.cache.node_tree import NodeTree
from scheduler.testing import make_node


def test_list_interleaves_zones_in_insertion_order() -> None:
    tree = NodeTree()
    for name, zone in [("n1", "a"), ("n2", "a"), ("n4", "b"), ("n3", "a"), ("n5", "c"), ("n6", "c")]:
        tree.add(make_node().name(name).zone(zone).obj())
    assert tree.list() == ["n1", "n4", "n5", "n2", "n6", "n3"]
    assert tree.num_nodes == 6


def test_empty_tree_lists_nothing() -> None:
    assert NodeTree().list() == []


def test_nodes_without_zone_labels_share_the_empty_zone() -> None:
    tree = NodeTree()
    tree.add(make_node().name("x").obj())
    tree.add(make_node().name("y").obj())
    assert tree.zone_of("x") == ""
    assert tree.list() == ["x", "y"]


def test_beta_zone_label_wins_over_ga_label() -> None:
    node = make_node().name("n").zone("ga-zone", "r").label("failure-domain.beta.kubernetes.io/zone", "beta-zone").obj()
    assert node.zone_key == "r:\x00:beta-zone"
    tree = NodeTree()
    tree.add(node)
    tree.add(make_node().name("m").labels({"failure-domain.beta.kubernetes.io/zone": "beta-zone",
                                         "failure-domain.beta.kubernetes.io/region": "r"}).obj())
    assert tree.zones() == ["r:\x00:beta-zone"]
    assert tree.list() == ["n", "m"]


def test_zone_change_moves_node_to_end_of_new_zone() -> None:
    tree = NodeTree()
    tree.add(make_node().name("n1").zone("a").obj())
    tree.add(make_node().name("n2").zone("a").obj())
    tree.add(make_node().name("n3").zone("b").obj())
    assert tree.update(make_node().name("n1").zone("b").obj()) is True
    assert tree.list() == ["n2", "n3", "n1"]
    assert tree.update(make_node().name("n1").zone("b").obj()) is False


def test_readd_of_known_node_does_not_duplicate() -> None:
    tree = NodeTree()
    tree.add(make_node().name("n1").zone("a").obj())
    tree.add(make_node().name("n1").zone("a").obj())
    assert tree.list() == ["n1"]
    assert tree.num_nodes == 1


def test_remove_drops_empty_zone_and_readded_zone_goes_last() -> None:
    tree = NodeTree()
    tree.add(make_node().name("n1").zone("a").obj())
    tree.add(make_node().name("n2").zone("b").obj())
    tree.add(make_node().name("n3").zone("b").obj())
    assert tree.remove("n1") is True
    assert tree.zones() == [":\x00:b"]
    tree.add(make_node().name("n4").zone("a").obj())
    assert tree.list() == ["n2", "n4", "n3"]
    assert tree.remove("missing") is False
    assert "n1" not in tree
