// SPDX-License-Identifier: MIT
// Deposit addresses without keys (version 2): CREATE2 clones of one DepositForwarder, deployed and emptied in batches by the hot wallet alone, a first deposit at the cost of a bare clone.
pragma solidity 0.8.37;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {DepositForwarder} from "./DepositForwarder.sol";

/// @notice Deployed through the deterministic deployment proxy with the hot wallet as `owner`, so it
/// (and every deposit address) has one address on every EVM network for that hot wallet.
contract DepositForwarderFactory {
    /// The most forwarders one flush may touch: keeps a batch well inside a block's gas limit (and
    /// inside the 256 bits of `fresh`).
    uint256 public constant MAX_BATCH = 100;

    /// The hot wallet: the only caller of flush, and the only destination of funds.
    address public immutable owner;
    /// The DepositForwarder every clone delegates to (the factory's first CREATE, nonce 1).
    address public immutable implementation;

    /// The native coin a forwarder gave (a token's move is the token's own Transfer log from the forwarder).
    event FlushedNative(address forwarder, uint256 amount);
    /// A forwarder whose flush reverted (e.g. a token that blocks it): the rest of the batch still moves.
    event FlushFailed(address indexed forwarder, address indexed token);

    error OnlyOwner();
    error ZeroOwner();
    error BadBatch();

    constructor(address owner_) {
        if (owner_ == address(0)) revert ZeroOwner();
        owner = owner_;
        implementation = address(new DepositForwarder(owner_));
    }

    /// The deposit address of `id`, deployed or not. The salt is the id itself: the owner is bound
    /// already, since it is in this factory's init code (so in its address and its implementation's).
    function forwarderAddress(bytes32 id) public view returns (address) {
        return Clones.predictDeterministicAddress(implementation, id, address(this));
    }

    /// For each i: deploys the forwarder of ids[i], then moves its native balance and its balance of
    /// tokens[uint8(tokenOf[i])] (zero: native only) to the owner. One forwarder with two tokens
    /// appears twice. The batch names each token once and each item by a one-byte index: a 20-byte
    /// address per item would cost 368 gas of calldata each. Bit i of `fresh` says the forwarder has
    /// no code yet: it is deployed without looking (the look is a cold account access, 2600 gas, 5%
    /// of a first deposit); without the bit, it is deployed only if it has no code. A fresh one that
    /// had code after all (a wrong bit) makes CREATE2 fail and the whole flush revert, nothing moved:
    /// the service sets the bit from the node's eth_getCode, and a reverted flush's deposits wait for
    /// the next one. A forwarder whose flush reverts is reported (FlushFailed) and skipped.
    function flush(bytes32[] calldata ids, address[] calldata tokens, bytes calldata tokenOf, uint256 fresh)
        external
    {
        if (msg.sender != owner) revert OnlyOwner();
        if (ids.length == 0 || ids.length > MAX_BATCH || tokenOf.length != ids.length) revert BadBatch();
        {
            bytes4 failure = BadBatch.selector;
            bytes4 flushSelector = DepositForwarder.flush.selector;
            bytes32 failedTopic = FlushFailed.selector;
            bytes32 nativeTopic = FlushedNative.selector;
            address impl = implementation;
            assembly ("memory-safe") {
                let ptr := mload(0x40)
                // [ptr, ptr+0x40): the clone's 55-byte init code at ptr+0x09, as OpenZeppelin's Clones lays it out.
                mstore(ptr, or(shr(232, shl(96, impl)), 0x3d602d80600a3d3981f3363d3d373d3d3d363d73000000))
                mstore(add(ptr, 0x20), or(shl(120, impl), 0x5af43d82803e903d91602b57fd5bf3))
                // [ptr+0x40, ptr+0x64): the forwarder call flush(token).
                mstore(add(ptr, 0x40), flushSelector)
                // [ptr+0x8b, +85): 0xff ‖ this ‖ salt ‖ keccak256(init code), CREATE2's address preimage.
                mstore(add(ptr, 0x80), address())
                mstore8(add(ptr, 0x8b), 0xff)
                mstore(add(ptr, 0xc0), keccak256(add(ptr, 0x09), 0x37))
                // [ptr+0xe0, ptr+0x140): the revert reason and the two events' topics, read on rare paths.
                mstore(add(ptr, 0xe0), failure)
                mstore(add(ptr, 0x100), failedTopic)
                mstore(add(ptr, 0x120), nativeTopic)
            }
        }
        // The loop is assembly: Solidity's bounds checks, cleanups and internal calls cost about 200
        // gas per deposit, what separates this factory from a bare clone's.
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            for { let i := 0 } lt(i, ids.length) { i := add(i, 1) } {
                let id := calldataload(add(ids.offset, shl(5, i)))
                let t := byte(0, calldataload(add(tokenOf.offset, i)))
                let token := calldataload(add(tokens.offset, shl(5, t)))
                if or(iszero(lt(t, tokens.length)), shr(160, token)) { revert(add(ptr, 0xe0), 4) }
                let forwarder := 0
                if iszero(and(shr(i, fresh), 1)) {
                    mstore(add(ptr, 0xa0), id)
                    forwarder := and(keccak256(add(ptr, 0x8b), 0x55), 0xffffffffffffffffffffffffffffffffffffffff)
                }
                if iszero(extcodesize_or_fresh(forwarder)) {
                    forwarder := create2(0, add(ptr, 0x09), 0x37, id)
                    if iszero(forwarder) { revert(add(ptr, 0xe0), 4) }
                }
                mstore(add(ptr, 0x44), token)
                // Yul evaluates arguments right to left: the call runs before returndatasize() is read.
                switch and(gt(returndatasize(), 31), call(gas(), forwarder, 0, add(ptr, 0x40), 0x24, 0, 0x20))
                case 0 { log3(0, 0, mload(add(ptr, 0x100)), forwarder, token) }
                default {
                    let amount := mload(0)
                    if amount {
                        mstore(0, forwarder)
                        mstore(0x20, amount)
                        log1(0, 0x40, mload(add(ptr, 0x120)))
                    }
                }
            }
            // A fresh item (forwarder still 0) is deployed without looking at its code.
            function extcodesize_or_fresh(a) -> size {
                if a { size := extcodesize(a) }
            }
        }
    }
}
