"""OpenFlow 1.5 messages for a host's Presto bridge, built with os-ken's
parser from the plan's tables (dcnet/controller/plan.py).

OpenFlow 1.5 and not 1.3: the select group's selection method (OVS's
"flowcell" and "dp_hash") travels in a group property (Netronome's
experimenter property, NTR_VENDOR_ID), and OVS encodes group properties
only in OpenFlow 1.5's group_mod (OpenFlow 1.1-1.4 group_mods have no
properties; OVS would fall back to its default selection).  Every flow
carries COOKIE, so a resync deletes exactly the controller's flows.
"""
import struct

NTR_VENDOR_ID = 0x0000154d      # Netronome (OVS include/openflow/openflow-common.h)
NTRT_SELECTION_METHOD = 1
NTR_MAX_SELECTION_METHOD_LEN = 16
# the controller's flows: "dc" for dcnet, then "9e57" (presto)
COOKIE = 0xdc00_9e57_0000_0001
COOKIE_MASK = 0xffff_ffff_ffff_ffff
BUNDLE_FLAGS_NAMES = ("atomic", "ordered")


def selection_prop(parser, ofp, method, param):
    """OVS's NTR selection-method group property: pad(4),
    method[16] (NUL-terminated), param (be64)"""
    name = method.encode()
    if not 0 < len(name) < NTR_MAX_SELECTION_METHOD_LEN:
        raise ValueError(f"selection method {method!r}")
    body = b"\0" * 4 + name.ljust(NTR_MAX_SELECTION_METHOD_LEN, b"\0") + struct.pack("!Q", param)
    words = list(struct.unpack("!%dI" % (len(body) // 4), body))
    return parser.OFPGroupPropExperimenter(type_=ofp.OFPGPT_EXPERIMENTER, experimenter=NTR_VENDOR_ID,
                                           exp_type=NTRT_SELECTION_METHOD, data=words)


def group_mod(dp, plan, dst_index, buckets, port_up, command=None):
    """a select group towards host dst_index: one bucket per tree
    (bucket_id = tree, its weight), set eth_dst to the tree's shadow MAC,
    out of the uplink; no buckets: the group drops"""
    from dcnet.controller.plan import shadow_mac
    ofp, parser = dp.ofproto, dp.ofproto_parser
    method, param = plan.selection()
    bks = [parser.OFPBucket(bucket_id=tree,
                            actions=[parser.OFPActionSetField(eth_dst=shadow_mac(dst_index, tree)),
                                     parser.OFPActionOutput(port_up)],
                            properties=[parser.OFPGroupBucketPropWeight(type_=ofp.OFPGBPT_WEIGHT,
                                                                        weight=weight)])
           for tree, weight in buckets]
    return parser.OFPGroupMod(dp, ofp.OFPGC_ADD if command is None else command, ofp.OFPGT_SELECT,
                              dst_index, buckets=bks, properties=[selection_prop(parser, ofp, method, param)])


def flow_mod(dp, f):
    """an OFPFC_ADD of one plan flow (plan.flows()) in table 0"""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    acts = []
    for kind, arg in f["actions"]:
        if kind == "group":
            acts.append(parser.OFPActionGroup(arg))
        elif kind == "set_eth_dst":
            acts.append(parser.OFPActionSetField(eth_dst=arg))
        elif kind == "output":
            acts.append(parser.OFPActionOutput(arg))
        else:
            raise ValueError(f"action {kind!r}")
    match = {"in_port": f["in_port"]}
    if f["eth_dst"]:
        match["eth_dst"] = f["eth_dst"]
    return parser.OFPFlowMod(dp, cookie=COOKIE, table_id=0, command=ofp.OFPFC_ADD, priority=f["priority"],
                             match=parser.OFPMatch(**match),
                             instructions=[parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, acts)])


def delete_mine(dp):
    """delete the controller's flows (by COOKIE) and every group"""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return [parser.OFPFlowMod(dp, cookie=COOKIE, cookie_mask=COOKIE_MASK, table_id=ofp.OFPTT_ALL,
                              command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                              match=parser.OFPMatch()),
            parser.OFPGroupMod(dp, ofp.OFPGC_DELETE, ofp.OFPGT_SELECT, ofp.OFPG_ALL)]


def host_tables(dp, plan, host):
    """the messages that install host's bridge from scratch: its groups,
    then its flows (a flow that names a group needs it)"""
    msgs = [group_mod(dp, plan, dst, b, host["port_up"]) for dst, b in plan.groups(host).items()]
    msgs += [flow_mod(dp, f) for f in plan.flows(host)]
    return msgs


def resync(dp, plan, host, bundle_id):
    """one atomic, ordered bundle that replaces the bridge's state with
    the plan's: delete the controller's flows and every group, add the
    groups and flows (the bridge forwards with its old tables until the
    commit: no gap).  Returns the messages to send, the commit last."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    flags = ofp.OFPBF_ATOMIC | ofp.OFPBF_ORDERED
    inner = delete_mine(dp) + host_tables(dp, plan, host)
    out = [parser.OFPBundleCtrlMsg(dp, bundle_id, ofp.OFPBCT_OPEN_REQUEST, flags, [])]
    out += [parser.OFPBundleAddMsg(dp, bundle_id, flags, m, []) for m in inner]
    out.append(parser.OFPBundleCtrlMsg(dp, bundle_id, ofp.OFPBCT_COMMIT_REQUEST, flags, []))
    return out
